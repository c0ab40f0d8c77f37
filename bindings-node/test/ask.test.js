// Asking (§3, §4, §11): errors, AbortSignal before and during, settlement by disposal.
'use strict'

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { getEventListeners } = require('node:events')

const { Agent, AskUserQuestionTool, Context, QuestionInbox, UserQuestionError, CODES } = require('..')

const M = {
  aborted: 'ask_user_question was aborted before the user answered',
  disposed: 'the user-questions provider was disposed before the user answered',
  noProvider: 'no user-questions provider is registered',
}

const QUESTIONS = [{ id: 'go', question: 'Proceed?', options: [{ label: 'Yes' }, { label: 'No' }] }]
const YES = { answers: [{ id: 'go', selected: ['Yes'] }] }

/** A provider that records its requests and never settles on its own. */
function waitingProvider() {
  const requests = []
  let notify
  const called = new Promise((resolve) => {
    notify = resolve
  })
  return {
    requests,
    called,
    provider: {
      ask(request) {
        requests.push(request)
        notify(request)
        return new Promise(() => {})
      },
    },
  }
}

async function rejection(promise) {
  try {
    await promise
  } catch (err) {
    return err
  }
  assert.fail('expected a rejection')
}

test('UserQuestionError is an Error with name, code and exact message', () => {
  const err = new UserQuestionError('the user cancelled ask_user_question', 'ASK_CANCELLED')
  assert.ok(err instanceof Error)
  assert.ok(err instanceof UserQuestionError)
  assert.equal(err.name, 'UserQuestionError')
  assert.equal(err.code, 'ASK_CANCELLED')
  assert.equal(err.message, 'the user cancelled ask_user_question')
  assert.match(err.stack, /^UserQuestionError: the user cancelled ask_user_question/)
  assert.equal(String(err), 'UserQuestionError: the user cancelled ask_user_question')
})

test('CODES is exactly §10, frozen', () => {
  assert.deepEqual(CODES, {
    OK: 0,
    ASK_ABORTED: 1,
    EMPTY_QUESTIONS: 2,
    CALLER_NOT_LIVE: 3,
    DELEGATED_CALLER: 4,
    BAD_INTENT: 5,
    NO_PROVIDER: 6,
    DUPLICATE_PROVIDER: 7,
    ASK_CANCELLED: 8,
    INVALID_REQUEST: 9,
    BAD_ANSWER: 10,
    PROVIDER_FAILED: 11,
    NOT_PENDING: 12,
    ALREADY_RESOLVED: 13,
    AGENT_EXISTS: 14,
    INVALID_ARGUMENT: 15,
    INTERNAL: 16,
    ASK_TIMED_OUT: 17,
  })
  assert.ok(Object.isFrozen(CODES))
})

test('ask rejects with UserQuestionError instances carrying the exact message', async () => {
  const ctx = new Context()
  const err = await rejection(ctx.userQuestions.ask({ questions: QUESTIONS }))
  assert.ok(err instanceof UserQuestionError)
  assert.equal(err.code, 'NO_PROVIDER')
  assert.equal(err.message, M.noProvider)
})

test('ask() always returns a Promise, even for a request that fails at once', async () => {
  const ctx = new Context()
  const p = ctx.userQuestions.ask(undefined)
  assert.ok(p instanceof Promise)
  const err = await rejection(p)
  assert.equal(err.code, 'INVALID_REQUEST')
  assert.equal(err.message, 'request must be an object')
})

test('malformed questions name the path; undefined optional fields count as absent', async () => {
  const ctx = new Context()
  ctx.userQuestions.registerProvider({ ask: () => YES })
  let err = await rejection(ctx.userQuestions.ask({ questions: [{ question: 'q' }] }))
  assert.equal(err.code, 'INVALID_REQUEST')
  assert.equal(err.message, 'questions[0].id must be a string')
  err = await rejection(ctx.userQuestions.ask({ questions: 'go' }))
  assert.equal(err.message, 'questions must be an array')
  const cyclic = { id: 'go', question: 'q' }
  cyclic.self = cyclic
  err = await rejection(ctx.userQuestions.ask({ questions: [cyclic] }))
  assert.equal(err.code, 'INVALID_REQUEST')
  assert.match(err.message, /^questions must be JSON data: /)
  const answer = await ctx.userQuestions.ask({
    questions: [{ id: 'go', question: 'q', detail: undefined, options: [{ label: 'Yes' }] }],
  })
  assert.deepEqual(answer, YES)
})

test('an already-aborted signal fails ASK_ABORTED without reaching the provider', async () => {
  const ctx = new Context()
  const w = waitingProvider()
  ctx.userQuestions.registerProvider(w.provider)
  const controller = new AbortController()
  controller.abort()
  const err = await rejection(ctx.userQuestions.ask({ questions: QUESTIONS, signal: controller.signal }))
  assert.equal(err.code, 'ASK_ABORTED')
  assert.equal(err.message, M.aborted)
  await new Promise((resolve) => setTimeout(resolve, 20))
  assert.equal(w.requests.length, 0)
})

test('an aborted signal is check #1: it wins over an empty batch and a stale agent', async () => {
  const ctx = new Context()
  const controller = new AbortController()
  controller.abort()
  const err = await rejection(
    ctx.userQuestions.ask({ questions: [], agent: new Agent('ghost'), signal: controller.signal }),
  )
  assert.equal(err.code, 'ASK_ABORTED')
})

test('AbortSignal.abort() and AbortSignal.timeout() signals work', async () => {
  const ctx = new Context()
  ctx.userQuestions.registerProvider(waitingProvider().provider)
  let err = await rejection(ctx.userQuestions.ask({ questions: QUESTIONS, signal: AbortSignal.abort() }))
  assert.equal(err.code, 'ASK_ABORTED')
  err = await rejection(ctx.userQuestions.ask({ questions: QUESTIONS, signal: AbortSignal.timeout(10) }))
  assert.equal(err.code, 'ASK_ABORTED')
  assert.equal(err.message, M.aborted)
})

test('aborting while waiting settles at once; the provider sees its signal abort', async () => {
  const ctx = new Context()
  const w = waitingProvider()
  ctx.userQuestions.registerProvider(w.provider)
  const controller = new AbortController()
  const asked = ctx.userQuestions.ask({ questions: QUESTIONS, signal: controller.signal })
  const request = await w.called
  assert.ok(request.signal instanceof AbortSignal)
  assert.equal(request.signal.aborted, false)
  const providerSaw = new Promise((resolve) => request.signal.addEventListener('abort', resolve))
  const started = performance.now()
  controller.abort()
  const err = await rejection(asked)
  const elapsed = performance.now() - started
  assert.equal(err.code, 'ASK_ABORTED')
  assert.equal(err.message, M.aborted)
  assert.ok(elapsed < 500, `settled after ${elapsed} ms`)
  await providerSaw
  assert.equal(request.signal.aborted, true)
})

test("the caller's own onabort and listeners keep working; ours is removed on settle", async () => {
  const ctx = new Context()
  const w = waitingProvider()
  ctx.userQuestions.registerProvider(w.provider)
  const controller = new AbortController()
  const seen = []
  controller.signal.onabort = () => seen.push('onabort')
  controller.signal.addEventListener('abort', () => seen.push('listener'))
  const before = getEventListeners(controller.signal, 'abort').length
  const asked = ctx.userQuestions.ask({ questions: QUESTIONS, signal: controller.signal })
  await w.called
  assert.equal(getEventListeners(controller.signal, 'abort').length, before + 1)
  controller.abort()
  assert.equal((await rejection(asked)).code, 'ASK_ABORTED')
  assert.deepEqual(seen, ['onabort', 'listener'])

  // A signal that outlives its ask keeps no listener of ours.
  const ctx2 = new Context()
  ctx2.userQuestions.registerProvider({ ask: () => YES })
  const long = new AbortController()
  long.signal.onabort = () => seen.push('second onabort')
  const baseline = getEventListeners(long.signal, 'abort').length
  await ctx2.userQuestions.ask({ questions: QUESTIONS, signal: long.signal })
  await Promise.all([1, 2, 3].map(() => ctx2.userQuestions.ask({ questions: QUESTIONS, signal: long.signal })))
  assert.equal(getEventListeners(long.signal, 'abort').length, baseline)
  assert.equal(typeof long.signal.onabort, 'function')
  long.abort()
  assert.deepEqual(seen, ['onabort', 'listener', 'second onabort'])
})

test('a signal that is not an AbortSignal is INVALID_REQUEST', async () => {
  const ctx = new Context()
  const err = await rejection(ctx.userQuestions.ask({ questions: QUESTIONS, signal: { aborted: false } }))
  assert.equal(err.code, 'INVALID_REQUEST')
  assert.equal(err.message, 'signal must be an AbortSignal')
})

test('disposing the provider while waiting settles ASK_ABORTED with the disposal message', async () => {
  const ctx = new Context()
  const w = waitingProvider()
  const dispose = ctx.userQuestions.registerProvider(w.provider)
  const asked = ctx.userQuestions.ask({ questions: QUESTIONS })
  const request = await w.called
  dispose()
  const err = await rejection(asked)
  assert.equal(err.code, 'ASK_ABORTED')
  assert.equal(err.message, M.disposed)
  await new Promise((resolve) => setImmediate(resolve))
  assert.equal(request.signal.aborted, true)
  assert.equal(ctx.userQuestions.hasProvider, false)
})

test('disposing the context settles waiting asks; later asks fail NO_PROVIDER', async () => {
  const ctx = new Context()
  const w = waitingProvider()
  ctx.userQuestions.registerProvider(w.provider)
  const asked = ctx.userQuestions.ask({ questions: QUESTIONS })
  const request = await w.called
  ctx.dispose()
  ctx.dispose()
  const err = await rejection(asked)
  assert.equal(err.code, 'ASK_ABORTED')
  assert.equal(err.message, M.disposed)
  for (let i = 0; i < 100 && !request.signal.aborted; i += 1) await new Promise((r) => setTimeout(r, 5))
  assert.equal(request.signal.aborted, true)
  const later = await rejection(ctx.userQuestions.ask({ questions: QUESTIONS }))
  assert.equal(later.code, 'NO_PROVIDER')
  assert.throws(() => ctx.userQuestions.registerProvider({ ask: () => YES }), {
    name: 'UserQuestionError',
    code: 'INVALID_ARGUMENT',
  })
})

test('Symbol.dispose disposes the context (`using`)', async () => {
  const w = waitingProvider()
  let asked
  {
    const ctx = new Context()
    ctx.userQuestions.registerProvider(w.provider)
    asked = ctx.userQuestions.ask({ questions: QUESTIONS })
    await w.called
    ctx[Symbol.dispose]()
  }
  assert.equal((await rejection(asked)).message, M.disposed)
})

test('an ask settles exactly once: abort after the answer changes nothing', async () => {
  const ctx = new Context()
  ctx.userQuestions.registerProvider({ ask: async () => YES })
  const controller = new AbortController()
  const answer = await ctx.userQuestions.ask({ questions: QUESTIONS, signal: controller.signal })
  controller.abort()
  assert.deepEqual(answer, YES)
})

test('abort racing the answer settles with one of the two, never both or neither', async () => {
  const ctx = new Context()
  let answerNow
  ctx.userQuestions.registerProvider({
    ask: () =>
      new Promise((resolve) => {
        answerNow = () => resolve(YES)
      }),
  })
  for (let i = 0; i < 50; i += 1) {
    const controller = new AbortController()
    const asked = ctx.userQuestions.ask({ questions: QUESTIONS, signal: controller.signal })
    await new Promise((resolve) => setImmediate(resolve))
    while (answerNow === undefined) await new Promise((resolve) => setImmediate(resolve))
    const answer = answerNow
    answerNow = undefined
    if (i % 2) {
      answer()
      controller.abort()
    } else {
      controller.abort()
      answer()
    }
    const outcome = await asked.then(
      (value) => ({ value }),
      (error) => ({ error }),
    )
    if (outcome.error) assert.equal(outcome.error.code, 'ASK_ABORTED')
    else assert.deepEqual(outcome.value, YES)
  }
})

test('strict answer checking is opt-in per service', async () => {
  const bad = { answers: [{ id: 'go', selected: ['Maybe'] }] }
  const ctx = new Context()
  ctx.userQuestions.registerProvider({ ask: () => bad })
  assert.deepEqual(await ctx.userQuestions.ask({ questions: QUESTIONS }), bad)
  ctx.userQuestions.strict = true
  assert.equal(ctx.userQuestions.strict, true)
  const err = await rejection(ctx.userQuestions.ask({ questions: QUESTIONS }))
  assert.equal(err.code, 'BAD_ANSWER')
  const strict = new Context({ strict: true })
  assert.equal(strict.userQuestions.strict, true)
})

test('1,000 concurrent asks all settle with their own answers', async () => {
  const ctx = new Context()
  ctx.userQuestions.registerProvider({
    async ask(request) {
      await new Promise((resolve) => setImmediate(resolve))
      return { answers: [{ id: request.questions[0].id, selected: [] }] }
    },
  })
  const started = performance.now()
  const answers = await Promise.all(
    Array.from({ length: 1000 }, (_, i) =>
      ctx.userQuestions.ask({ questions: [{ id: `q${i}`, question: `Question ${i}?` }] }),
    ),
  )
  const elapsed = performance.now() - started
  answers.forEach((answer, i) => assert.deepEqual(answer, { answers: [{ id: `q${i}`, selected: [] }] }))
  assert.ok(elapsed < 10000, `1,000 asks took ${elapsed} ms`)
})

test('1,000 concurrent asks aborted while waiting all settle ASK_ABORTED', async () => {
  const ctx = new Context()
  let calls = 0
  ctx.userQuestions.registerProvider({
    ask() {
      calls += 1
      return new Promise(() => {})
    },
  })
  const controller = new AbortController()
  const asks = Array.from({ length: 1000 }, (_, i) =>
    ctx.userQuestions.ask({ questions: [{ id: `q${i}`, question: '?' }], signal: controller.signal }),
  )
  while (calls < 1000) await new Promise((resolve) => setImmediate(resolve))
  controller.abort()
  const outcomes = await Promise.allSettled(asks)
  for (const outcome of outcomes) {
    assert.equal(outcome.status, 'rejected')
    assert.equal(outcome.reason.code, 'ASK_ABORTED')
  }
  assert.equal(getEventListeners(controller.signal, 'abort').length, 0)
})

test('one signal passed to asks in turn, in two contexts: each waiting ask aborts with it, settled ones stay settled, later ones fail at once', async () => {
  const one = new Context()
  const two = new Context()
  const reached = []
  const now = [{ id: 'now', question: 'Now?' }]
  const answered = { answers: [{ id: 'now', selected: [] }] }
  const waiting = (name) => ({
    ask(request) {
      reached.push(name)
      return request.questions[0].id === 'now' ? answered : new Promise(() => {})
    },
  })
  one.userQuestions.registerProvider(waiting('one'))
  two.userQuestions.registerProvider(waiting('two'))
  const controller = new AbortController()
  const signal = controller.signal
  // Asked and settled in turn, with no ask waiting in between.
  for (let i = 0; i < 3; i++) {
    assert.deepEqual(await one.userQuestions.ask({ questions: now, signal }), answered)
    assert.deepEqual(await two.userQuestions.ask({ questions: now, signal }), answered)
  }
  assert.equal(getEventListeners(signal, 'abort').length, 0)
  // Two wait, in two contexts, while a third settles.
  const a = one.userQuestions.ask({ questions: QUESTIONS, signal })
  const b = two.userQuestions.ask({ questions: QUESTIONS, signal })
  assert.deepEqual(await one.userQuestions.ask({ questions: now, signal }), answered)
  while (reached.length < 9) await new Promise((resolve) => setImmediate(resolve))
  controller.abort()
  assert.equal((await rejection(a)).code, 'ASK_ABORTED')
  assert.equal((await rejection(b)).code, 'ASK_ABORTED')
  assert.equal(getEventListeners(signal, 'abort').length, 0)
  // Aborted now: a later ask fails at once, without reaching the provider.
  assert.equal((await rejection(one.userQuestions.ask({ questions: now, signal }))).code, 'ASK_ABORTED')
  assert.equal(reached.length, 9)

  // A signal aborted while no ask waits on it (no listener of ours): the next ask fails too.
  const idle = new AbortController()
  assert.deepEqual(await one.userQuestions.ask({ questions: now, signal: idle.signal }), answered)
  idle.abort()
  assert.equal((await rejection(two.userQuestions.ask({ questions: now, signal: idle.signal }))).code, 'ASK_ABORTED')
  assert.equal(reached.length, 10)
  one.dispose()
  two.dispose()
})

test('many asks sharing one signal add one listener to it, and abort together', async () => {
  const ctx = new Context()
  let calls = 0
  ctx.userQuestions.registerProvider({
    ask() {
      calls += 1
      return new Promise(() => {})
    },
  })
  const controller = new AbortController()
  const asks = Array.from({ length: 20 }, () =>
    ctx.userQuestions.ask({ questions: QUESTIONS, signal: controller.signal }),
  )
  assert.equal(getEventListeners(controller.signal, 'abort').length, 1)
  while (calls < 20) await new Promise((resolve) => setImmediate(resolve))
  controller.abort()
  for (const outcome of await Promise.allSettled(asks)) assert.equal(outcome.reason.code, 'ASK_ABORTED')
})

test('one signal shared by an ask, a plan review and a tool call: one listener until the last settles, one abort withdraws those still waiting', async () => {
  const ctx = new Context()
  const inbox = new QuestionInbox()
  ctx.userQuestions.registerProvider(inbox)
  const tool = new AskUserQuestionTool(ctx)
  const controller = new AbortController()
  const { signal } = controller
  const asked = ctx.userQuestions.ask({ questions: QUESTIONS, signal })
  const reviewed = ctx.userQuestions.reviewPlan('1. Ship it.', { signal })
  const called = tool.execute({ questions: [{ id: 'go', question: 'Proceed?' }] }, { signal })
  assert.equal(getEventListeners(signal, 'abort').length, 1)
  assert.deepEqual(
    inbox.pending().map((p) => p.questions[0].id),
    ['go', 'plan', 'go'],
  )
  // The plan review is answered: the others still listen, through the one listener.
  inbox.answer(2, { answers: [{ id: 'plan', selected: ['Reject'] }] })
  assert.deepEqual(await reviewed, { decision: 'rejected' })
  assert.equal(getEventListeners(signal, 'abort').length, 1)
  controller.abort()
  await assert.rejects(asked, { code: 'ASK_ABORTED', message: M.aborted })
  const result = await called
  assert.equal(result.isError, true)
  assert.equal(result.error.code, 'ASK_ABORTED')
  assert.deepEqual(inbox.pending(), [])
  assert.equal(getEventListeners(signal, 'abort').length, 0)
})

test("an abort's reason changes nothing: ASK_ABORTED with the exact message, before and while waiting", async () => {
  // Before: check #1, ahead of everything else (here, of NO_PROVIDER).
  const empty = new Context()
  for (const reason of [new Error('user pressed stop'), 'stop', 42]) {
    const err = await rejection(empty.userQuestions.ask({ questions: QUESTIONS, signal: AbortSignal.abort(reason) }))
    assert.ok(err instanceof UserQuestionError)
    assert.deepEqual({ code: err.code, message: err.message }, { code: 'ASK_ABORTED', message: M.aborted })
  }
  const ctx = new Context()
  const { provider, called } = waitingProvider()
  ctx.userQuestions.registerProvider(provider)
  const controller = new AbortController()
  const waiting = ctx.userQuestions.ask({ questions: QUESTIONS, signal: controller.signal })
  await called
  controller.abort(new Error('user pressed stop'))
  const err = await rejection(waiting)
  assert.ok(err instanceof UserQuestionError)
  assert.deepEqual({ code: err.code, message: err.message }, { code: 'ASK_ABORTED', message: M.aborted })
  // A composite signal (AbortSignal.any) withdraws the ask when any of its sources aborts.
  const source = new AbortController()
  const composite = ctx.userQuestions.ask({
    questions: QUESTIONS,
    signal: AbortSignal.any([new AbortController().signal, source.signal]),
  })
  source.abort('stop')
  await assert.rejects(composite, { code: 'ASK_ABORTED', message: M.aborted })
})

test('a context dropped by its creator while an ask waits is not collected under the ask', async () => {
  let answerNow
  const asked = (() => {
    const ctx = new Context()
    ctx.userQuestions.registerProvider({
      ask: () =>
        new Promise((resolve) => {
          answerNow = () => resolve(YES)
        }),
    })
    return ctx.userQuestions.ask({ questions: QUESTIONS })
  })()
  while (answerNow === undefined) await new Promise((resolve) => setImmediate(resolve))
  for (let i = 0; i < 3; i += 1) {
    if (global.gc) global.gc()
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  answerNow()
  assert.deepEqual(await asked, YES)
})
