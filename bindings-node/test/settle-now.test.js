// Asks that settle while they start: the native side returns their outcome at once
// instead of a Promise; the public API is unchanged (a Promise that settles asynchronously,
// listeners and pins released). Asks that do not settle at once become inline tasks after
// one poll with a do-nothing waker (src/inline.rs): the races below check that no wakeup is
// lost in that hand-over (a lost one would leave an ask waiting forever).
'use strict'

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { getEventListeners } = require('node:events')

const native = require('../native.js')
const { AskUserQuestionTool, AutoResponder, Context, QuestionInbox } = require('..')

const QUESTIONS = [{ id: 'go', question: 'Proceed?', options: [{ label: 'Yes' }, { label: 'No (Recommended)' }] }]
const YES = { answers: [{ id: 'go', selected: ['Yes'] }] }
const NO = { answers: [{ id: 'go', selected: ['No (Recommended)'] }] }

/**
 * Whether `promise` settles within a few microtask ticks, i.e. without waiting for the event
 * loop (a Promise resolved from another thread needs at least one turn of it).
 */
async function settlesWithinMicrotasks(promise) {
  let settled = false
  promise.then(
    () => {
      settled = true
    },
    () => {
      settled = true
    },
  )
  for (let i = 0; i < 5 && !settled; i++) await null
  return settled
}

/** `promise`, or a failure naming `what` when it has not settled within 10 s. */
async function settlesSoon(promise, what) {
  let timer
  const watchdog = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} never settled (a lost wakeup?)`)), 10_000)
  })
  try {
    return await Promise.race([promise, watchdog])
  } finally {
    clearTimeout(timer)
  }
}

test('the native ask returns the outcome text itself when the ask settles while it starts', () => {
  const ctx = new native.NativeContext()
  ctx.registerAutoResponder(new native.NativeAutoResponder('recommended', false))
  const text = ctx.ask(JSON.stringify({ questions: QUESTIONS }), null, null)
  assert.equal(typeof text, 'string')
  assert.deepEqual(JSON.parse(text), { answer: NO })

  const abort = new native.NativeAbort()
  const inbox = new native.NativeInbox()
  const ctx2 = new native.NativeContext()
  ctx2.registerInbox(inbox)
  const waiting = ctx2.ask(JSON.stringify({ questions: QUESTIONS }), null, abort)
  assert.ok(waiting instanceof Promise, 'an ask still waiting is a Promise')
  abort.abort()
  return waiting.then((outcome) => assert.equal(JSON.parse(outcome).error.code, 'ASK_ABORTED'))
})

test('the native executeTool returns the result text itself when the ask settles at once', () => {
  const ctx = new native.NativeContext()
  ctx.registerAutoResponder(new native.NativeAutoResponder('first', false))
  const text = ctx.executeTool(JSON.stringify({ questions: QUESTIONS }), null, null, '{}')
  assert.equal(typeof text, 'string')
  assert.equal(JSON.parse(text).isError, false)
  const refused = ctx.executeTool('{"questions":[]}', null, null, '{}')
  assert.equal(typeof refused, 'string')
  assert.equal(JSON.parse(refused).isError, true)
})

test('an ask settled at once still returns a Promise that settles asynchronously, within microtasks', async () => {
  const ctx = new Context()
  ctx.userQuestions.registerProvider(new AutoResponder('recommended'))
  const asked = ctx.userQuestions.ask({ questions: QUESTIONS })
  assert.ok(asked instanceof Promise)
  let settled = false
  asked.then(() => {
    settled = true
  })
  assert.equal(settled, false, 'then-callbacks never run synchronously')
  assert.equal(await settlesWithinMicrotasks(asked), true)
  assert.deepEqual(await asked, NO)
})

test('an ask settled at once with a signal leaves no listener on it; a later abort changes nothing', async () => {
  const ctx = new Context()
  ctx.userQuestions.registerProvider(new AutoResponder('first'))
  const controller = new AbortController()
  const baseline = getEventListeners(controller.signal, 'abort').length
  assert.deepEqual(await ctx.userQuestions.ask({ questions: QUESTIONS, signal: controller.signal }), YES)
  const many = await Promise.all(
    Array.from({ length: 10 }, () => ctx.userQuestions.ask({ questions: QUESTIONS, signal: controller.signal })),
  )
  for (const answer of many) assert.deepEqual(answer, YES)
  assert.equal(getEventListeners(controller.signal, 'abort').length, baseline)
  controller.abort()
  assert.deepEqual(await ctx.userQuestions.ask({ questions: QUESTIONS }), YES)
})

test('the tool settled at once still returns a Promise of the result, within microtasks', async () => {
  const ctx = new Context()
  ctx.userQuestions.registerProvider(new AutoResponder('first'))
  const tool = new AskUserQuestionTool(ctx)
  const executed = tool.execute({ questions: QUESTIONS })
  assert.ok(executed instanceof Promise)
  assert.equal(await settlesWithinMicrotasks(executed), true)
  const result = await executed
  assert.equal(result.isError, false)
  const refused = tool.execute({ questions: [] })
  assert.ok(refused instanceof Promise)
  assert.equal((await refused).isError, true)
})

test('race: an inbox answered right after each ask starts (before its task polls it)', async () => {
  const ctx = new Context()
  const inbox = new QuestionInbox()
  ctx.userQuestions.registerProvider(inbox)
  let ticket = 0
  for (let i = 0; i < 300; i++) {
    const asked = ctx.userQuestions.ask({ questions: QUESTIONS })
    inbox.answer(++ticket, i % 2 ? YES : NO)
    assert.deepEqual(await settlesSoon(asked, `ask ${i}`), i % 2 ? YES : NO)
  }
  // All at once: the answers race the tasks' first polls of many asks.
  const asks = Array.from({ length: 500 }, () => ctx.userQuestions.ask({ questions: QUESTIONS }))
  for (let i = 0; i < asks.length; i++) inbox.answer(++ticket, i % 2 ? YES : NO)
  const answers = await settlesSoon(Promise.all(asks), 'the 500 asks')
  answers.forEach((answer, i) => assert.deepEqual(answer, i % 2 ? YES : NO))
})

test('race: an abort right after each ask starts (inbox and JS provider) settles ASK_ABORTED', async () => {
  const inboxCtx = new Context()
  inboxCtx.userQuestions.registerProvider(new QuestionInbox())
  const jsCtx = new Context()
  jsCtx.userQuestions.registerProvider({ ask: () => new Promise(() => {}) })
  for (const ctx of [inboxCtx, jsCtx]) {
    const asks = []
    for (let i = 0; i < 300; i++) {
      const controller = new AbortController()
      asks.push(ctx.userQuestions.ask({ questions: QUESTIONS, signal: controller.signal }))
      controller.abort()
    }
    for (const outcome of await settlesSoon(Promise.allSettled(asks), 'the aborted asks')) {
      assert.equal(outcome.status, 'rejected')
      assert.equal(outcome.reason.code, 'ASK_ABORTED')
    }
  }
})

test('race: a registration disposed right after asks start settles them ASK_ABORTED', async () => {
  for (let round = 0; round < 50; round++) {
    const ctx = new Context()
    const dispose = ctx.userQuestions.registerProvider(new QuestionInbox())
    const asks = Array.from({ length: 10 }, () => ctx.userQuestions.ask({ questions: QUESTIONS }))
    dispose()
    for (const outcome of await settlesSoon(Promise.allSettled(asks), `round ${round}`)) {
      assert.equal(outcome.reason.code, 'ASK_ABORTED')
    }
  }
})

test('race: JS providers answering synchronously and asynchronously all settle with their answers', async () => {
  const ctx = new Context()
  let n = 0
  ctx.userQuestions.registerProvider({
    ask() {
      n += 1
      if (n % 3 === 0) return YES
      if (n % 3 === 1) return Promise.resolve(NO)
      return new Promise((resolve) => setImmediate(() => resolve(YES)))
    },
  })
  const asks = Array.from({ length: 600 }, () => ctx.userQuestions.ask({ questions: QUESTIONS }))
  const answers = await settlesSoon(Promise.all(asks), 'the JS provider asks')
  assert.equal(answers.length, 600)
  for (const answer of answers) assert.ok([YES, NO].some((a) => JSON.stringify(a) === JSON.stringify(answer)))
})

test('a JS provider settles its call through one native call: the ask settles before it returns', async () => {
  const ctx = new Context()
  let answer
  ctx.userQuestions.registerProvider({ ask: () => new Promise((resolve) => (answer = resolve)) })
  const asked = ctx.userQuestions.ask({ questions: QUESTIONS })
  while (answer === undefined) await null
  answer(YES)
  // The provider's Promise resolves; its reaction settles the call natively, and the asker's
  // Promise is resolved in that same reaction: a few microtasks, no turn of the event loop.
  assert.equal(await settlesWithinMicrotasks(asked), true)
  assert.deepEqual(await asked, YES)
  ctx.dispose()
})

test('settling a call that no longer waits (unknown, settled, withdrawn) does nothing', async () => {
  const calls = new native.NativeProviderCalls()
  calls.settle(1, JSON.stringify({ answer: YES }))
  calls.settle(1, 'not even JSON')
  // Through a provider: its ask withdrawn, then settled late, twice.
  const ctx = new Context()
  let late
  ctx.userQuestions.registerProvider({ ask: () => new Promise((resolve) => (late = resolve)) })
  const controller = new AbortController()
  const asked = ctx.userQuestions.ask({ questions: QUESTIONS, signal: controller.signal })
  while (late === undefined) await null
  controller.abort()
  await assert.rejects(asked, { code: 'ASK_ABORTED' })
  late(YES)
  late(NO)
  // The next ask still gets its own answer.
  late = undefined
  const next = ctx.userQuestions.ask({ questions: QUESTIONS })
  while (late === undefined) await new Promise((resolve) => setImmediate(resolve))
  late(NO)
  assert.deepEqual(await settlesSoon(next, 'the next ask'), NO)
  ctx.dispose()
})
