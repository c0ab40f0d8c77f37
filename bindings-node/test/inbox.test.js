// The question inbox (§7) for JS UIs.
'use strict'

const { test } = require('node:test')
const assert = require('node:assert/strict')

const { Agent, Context, QuestionInbox, UserQuestionError, validateAnswer } = require('..')

const QUESTIONS = [
  { id: 'color', question: 'Which color?', options: [{ label: 'Red' }, { label: 'Blue' }] },
]
const RED = { answers: [{ id: 'color', selected: ['Red'] }] }

function setUp() {
  const ctx = new Context()
  const inbox = new QuestionInbox()
  ctx.userQuestions.registerProvider(inbox)
  return { ctx, inbox }
}

const tick = () => new Promise((resolve) => setImmediate(resolve))

/** Pending questions and events without their `askedAt` (checked to be RFC 3339 with ms). */
function withoutAskedAt(items) {
  return items.map(({ askedAt, ...rest }) => {
    if (askedAt !== undefined) assert.match(askedAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
    return rest
  })
}

test('an ask becomes a pending question with a ticket; answer settles it', async () => {
  const { ctx, inbox } = setUp()
  const root = new Agent('root')
  ctx.agents.enter(root)
  const asked = ctx.userQuestions.ask({ questions: QUESTIONS, agent: root })
  const other = ctx.userQuestions.ask({ questions: QUESTIONS })
  assert.deepEqual(withoutAskedAt(inbox.pending()), [
    { ticket: 1, questions: QUESTIONS, agentId: 'root' },
    { ticket: 2, questions: QUESTIONS },
  ])
  assert.deepEqual(Object.keys(inbox.pending()[0]), ['ticket', 'questions', 'agentId', 'askedAt'])
  inbox.answer(1, RED)
  assert.deepEqual(await asked, RED)
  assert.deepEqual(
    inbox.pending().map((p) => p.ticket),
    [2],
  )
  inbox.cancel(2)
  await assert.rejects(other, {
    name: 'UserQuestionError',
    code: 'ASK_CANCELLED',
    message: 'the user cancelled ask_user_question',
  })
})

test('BAD_ANSWER leaves the question pending; the first valid answer wins', async () => {
  const { ctx, inbox } = setUp()
  const asked = ctx.userQuestions.ask({ questions: QUESTIONS })
  assert.throws(() => inbox.answer(1, { answers: [{ id: 'color', selected: ['Green'] }] }), (err) => {
    assert.ok(err instanceof UserQuestionError)
    assert.equal(err.code, 'BAD_ANSWER')
    assert.match(err.message, /Green/)
    return true
  })
  assert.throws(() => inbox.answer(1, { answers: 'Red' }), {
    code: 'BAD_ANSWER',
    message: 'answers must be an array',
  })
  assert.equal(inbox.pending().length, 1)
  inbox.answer(1, RED)
  assert.throws(() => inbox.answer(1, RED), {
    code: 'ALREADY_RESOLVED',
    message: 'question 1 is already resolved',
  })
  assert.throws(() => inbox.cancel(1), { code: 'ALREADY_RESOLVED' })
  assert.throws(() => inbox.fail(1, 'x'), { code: 'ALREADY_RESOLVED' })
  assert.throws(() => inbox.cancel(9), { code: 'NOT_PENDING', message: 'question 9 is not pending' })
  assert.throws(() => inbox.cancel(0), { code: 'NOT_PENDING', message: 'question 0 is not pending' })
  // The ticket is checked before the answer, as on every surface.
  assert.throws(() => inbox.answer(9, { answers: 'Red' }), { code: 'NOT_PENDING' })
  assert.throws(() => inbox.answer(1, { answers: 'Red' }), { code: 'ALREADY_RESOLVED' })
  assert.deepEqual(await asked, RED)
})

test('fail settles PROVIDER_FAILED with the message', async () => {
  const { ctx, inbox } = setUp()
  const asked = ctx.userQuestions.ask({ questions: QUESTIONS })
  inbox.fail(1, 'the web page was closed')
  await assert.rejects(asked, { code: 'PROVIDER_FAILED', message: 'the web page was closed' })
})

test('bad ticket and message arguments are INVALID_ARGUMENT', () => {
  const inbox = new QuestionInbox()
  for (const ticket of ['1', 1.5, NaN, Infinity, undefined]) {
    assert.throws(() => inbox.cancel(ticket), { name: 'UserQuestionError', code: 'INVALID_ARGUMENT' })
  }
  assert.throws(() => inbox.fail(1, 42), { code: 'INVALID_ARGUMENT' })
})

test('an integer no ticket can have was never issued: NOT_PENDING, as in Python and C (§7)', () => {
  const inbox = new QuestionInbox()
  for (const ticket of [0, -1, -0, 2 ** 53 - 1, 2 ** 53, 1e20]) {
    const n = Object.is(ticket, -0) ? 0 : ticket
    const message = `question ${BigInt(n)} is not pending`
    for (const call of [() => inbox.cancel(ticket), () => inbox.fail(ticket, 'x'), () => inbox.answer(ticket, { answers: [] }), () => inbox.extend(ticket, 1000)]) {
      assert.throws(call, { name: 'UserQuestionError', code: 'NOT_PENDING', message })
    }
  }
})

test('subscribers see requested and resolved events in order, including withdrawals', async () => {
  const { ctx, inbox } = setUp()
  const events = []
  const alsoEvents = []
  const unsubscribe = inbox.subscribe((event) => events.push(event))
  inbox.subscribe((event) => alsoEvents.push(event.type))
  const root = new Agent('root')
  ctx.agents.enter(root)
  const controller = new AbortController()
  const first = ctx.userQuestions.ask({ questions: QUESTIONS, agent: root })
  const second = ctx.userQuestions.ask({ questions: QUESTIONS, signal: controller.signal })
  const third = ctx.userQuestions.ask({ questions: QUESTIONS })
  // Delivered on this thread before the call that caused them returns.
  assert.equal(events.length, 3)
  inbox.answer(1, RED)
  assert.equal(events.length, 4)
  controller.abort()
  assert.equal(events.length, 5)
  inbox.fail(3, 'nope')
  assert.equal(events.length, 6)
  await first
  await assert.rejects(second, { code: 'ASK_ABORTED' })
  await assert.rejects(third, { code: 'PROVIDER_FAILED' })
  assert.deepEqual(withoutAskedAt(events), [
    { type: 'requested', ticket: 1, questions: QUESTIONS, agentId: 'root' },
    { type: 'requested', ticket: 2, questions: QUESTIONS },
    { type: 'requested', ticket: 3, questions: QUESTIONS },
    { type: 'resolved', ticket: 1, outcome: 'answered' },
    { type: 'resolved', ticket: 2, outcome: 'aborted' },
    { type: 'resolved', ticket: 3, outcome: 'failed' },
  ])
  assert.deepEqual(alsoEvents, ['requested', 'requested', 'requested', 'resolved', 'resolved', 'resolved'])
  unsubscribe()
  unsubscribe()
  const fourth = ctx.userQuestions.ask({ questions: QUESTIONS })
  inbox.cancel(4)
  await assert.rejects(fourth, { code: 'ASK_CANCELLED' })
  await tick()
  await tick()
  assert.equal(events.length, 6)
  assert.equal(alsoEvents.length, 8)
})

test('a throwing subscriber is reported as a warning and does not stop the others', async () => {
  const { ctx, inbox } = setUp()
  const warnings = []
  const onWarning = (w) => warnings.push(w)
  process.on('warning', onWarning)
  try {
    const seen = []
    inbox.subscribe(() => {
      throw new Error('UI bug')
    })
    inbox.subscribe((event) => seen.push(event.type))
    const asked = ctx.userQuestions.ask({ questions: QUESTIONS })
    inbox.cancel(1)
    await assert.rejects(asked, { code: 'ASK_CANCELLED' })
    while (seen.length < 2 || warnings.length < 2) await tick()
    assert.deepEqual(seen, ['requested', 'resolved'])
    assert.equal(warnings[0].code, 'USER_QUESTIONS_SUBSCRIBER')
    assert.match(warnings[0].message, /UI bug/)
  } finally {
    process.off('warning', onWarning)
  }
})

test('a subscriber throwing what cannot be looked at (a revoked Proxy) is still reported, once per event', async () => {
  const { ctx, inbox } = setUp()
  const warnings = []
  const onWarning = (w) => warnings.push(`${w.code}: ${w.message}`)
  process.on('warning', onWarning)
  try {
    const seen = []
    inbox.subscribe(() => {
      const { proxy, revoke } = Proxy.revocable({}, {})
      revoke()
      throw proxy
    })
    inbox.subscribe((event) => seen.push(event.type))
    const asked = ctx.userQuestions.ask({ questions: QUESTIONS })
    inbox.cancel(1)
    await assert.rejects(asked, { code: 'ASK_CANCELLED' })
    // Warnings are emitted on the next tick: all of them are out after a turn of the loop.
    await tick()
    assert.deepEqual(seen, ['requested', 'resolved'])
    assert.deepEqual(warnings, Array(2).fill('USER_QUESTIONS_SUBSCRIBER: a QuestionInbox subscriber threw: [object Object]'))
  } finally {
    process.off('warning', onWarning)
  }
})

test('disposing the context settles a pending question ASK_ABORTED and drops it', async () => {
  const { ctx, inbox } = setUp()
  const asked = ctx.userQuestions.ask({ questions: QUESTIONS })
  ctx.dispose()
  await assert.rejects(asked, {
    code: 'ASK_ABORTED',
    message: 'the user-questions provider was disposed before the user answered',
  })
  assert.deepEqual(inbox.pending(), [])
  assert.throws(() => inbox.answer(1, RED), { code: 'ALREADY_RESOLVED' })
})

test('several UIs on one inbox: the first answer wins, the other sees ALREADY_RESOLVED', async () => {
  const { ctx, inbox } = setUp()
  const asked = ctx.userQuestions.ask({ questions: QUESTIONS })
  const results = [RED, { answers: [{ id: 'color', selected: ['Blue'] }] }].map((answer) => {
    try {
      inbox.answer(1, answer)
      return 'OK'
    } catch (err) {
      return err.code
    }
  })
  assert.deepEqual(results, ['OK', 'ALREADY_RESOLVED'])
  assert.deepEqual(await asked, RED)
})

test('1,000 concurrent asks through the inbox, answered in reverse order', async () => {
  const { ctx, inbox } = setUp()
  const asks = Array.from({ length: 1000 }, (_, i) =>
    ctx.userQuestions.ask({ questions: [{ id: `q${i}`, question: '?' }] }),
  )
  const pending = inbox.pending()
  assert.equal(pending.length, 1000)
  for (const p of pending.reverse()) {
    inbox.answer(p.ticket, { answers: [{ id: p.questions[0].id, selected: [], custom: `t${p.ticket}` }] })
  }
  const answers = await Promise.all(asks)
  answers.forEach((answer, i) => assert.deepEqual(answer, { answers: [{ id: `q${i}`, selected: [], custom: `t${i + 1}` }] }))
})

test('validateAnswer returns when the answer fits and throws BAD_ANSWER when not', () => {
  assert.equal(validateAnswer(QUESTIONS, RED), undefined)
  assert.equal(validateAnswer(QUESTIONS, { answers: [{ id: 'color', selected: [] }] }), undefined)
  assert.throws(() => validateAnswer(QUESTIONS, { answers: [] }), {
    name: 'UserQuestionError',
    code: 'BAD_ANSWER',
    message: 'the answer has 0 items for 1 questions; it needs exactly one per question, in order',
  })
  assert.throws(() => validateAnswer(QUESTIONS, { answers: [{ id: 'color' }] }), {
    code: 'BAD_ANSWER',
    message: 'answers[0].selected must be an array of strings',
  })
  assert.throws(() => validateAnswer([{ id: 1 }], RED), {
    code: 'INVALID_REQUEST',
    message: 'questions[0].id must be a string',
  })
})
