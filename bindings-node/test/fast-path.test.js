// The fast path of JS providers: an ask started on the JS thread hands its provider call back
// to the JS layer as the native ask's return value (`{"call":n,…}`), the JS layer runs the
// provider, and `calls.settle` returns the ask's outcome text at once. Withdrawals still reach
// the provider's signal before the asker can observe the settlement (§4.7): the dispatcher
// hears `(call, null)` and then `(call, null, outcome)`, in that order.
'use strict'

const { test } = require('node:test')
const assert = require('node:assert/strict')

const native = require('../native.js')
const { AutoResponder, Context, UserQuestionError } = require('..')

const Q = [{ id: 'go', question: 'Proceed?', options: [{ label: 'Yes' }, { label: 'No' }] }]
const YES = { answers: [{ id: 'go', selected: ['Yes'] }] }
const REQUEST = JSON.stringify({ questions: Q })

/** A native context with a recording dispatcher: `log` gets every dispatch call. */
function recorded() {
  const ctx = new native.NativeContext(null)
  const calls = new native.NativeProviderCalls()
  /** @type {Array<[number, string | null, string | undefined]>} */
  const log = []
  ctx.registerDispatcher((call, payload, outcome) => {
    log.push([call, payload, outcome])
  }, calls)
  return { ctx, calls, log }
}

test('a JS provider call started on the JS thread comes back as the payload, not through the dispatcher', () => {
  const { ctx, calls, log } = recorded()
  const started = ctx.ask(REQUEST, null, null)
  assert.equal(typeof started, 'string')
  const payload = JSON.parse(started)
  assert.equal(typeof payload.call, 'number')
  assert.deepEqual(payload.questions, Q)
  assert.deepEqual(log, [], 'the dispatcher was not called')
  // Its settlement returns the ask's outcome text at once.
  const text = calls.settle(payload.call, JSON.stringify({ answer: YES }))
  assert.deepEqual(JSON.parse(text), { answer: YES })
  assert.deepEqual(log, [], 'the outcome came back from settle, not through the dispatcher')
  // Settled: a second settlement finds nothing.
  assert.equal(calls.settle(payload.call, JSON.stringify({ answer: YES })), null)
  ctx.dispose()
})

test('a provider failure and a bad answer come back from settle as error outcomes', () => {
  const { ctx, calls } = recorded()
  ctx.strict = true
  const one = JSON.parse(ctx.ask(REQUEST, null, null)).call
  const failed = JSON.parse(calls.settle(one, JSON.stringify({ error: { code: 'PROVIDER_FAILED', message: 'boom' } })))
  assert.deepEqual(failed, { error: { code: 'PROVIDER_FAILED', message: 'boom' } })
  const two = JSON.parse(ctx.ask(REQUEST, null, null)).call
  const bad = JSON.parse(calls.settle(two, JSON.stringify({ answer: { answers: [{ id: 'go', selected: ['Maybe'] }] } })))
  assert.equal(bad.error.code, 'BAD_ANSWER')
  ctx.dispose()
})

for (const [cause, withdraw, code] of [
  ['caller abort', ({ abort }) => abort.abort(), 'ASK_ABORTED'],
  ['provider dispose', ({ registration }) => registration.dispose(), 'ASK_ABORTED'],
  ['context dispose', ({ ctx }) => ctx.dispose(), 'ASK_ABORTED'],
]) {
  test(`${cause} of a fast-path call: the dispatcher hears the withdrawal, then the outcome`, () => {
    const ctx = new native.NativeContext(null)
    const calls = new native.NativeProviderCalls()
    const log = []
    const registration = ctx.registerDispatcher((call, payload, outcome) => log.push([call, payload, outcome]), calls)
    const abort = new native.NativeAbort()
    const call = JSON.parse(ctx.ask(REQUEST, null, abort)).call
    withdraw({ abort, registration, ctx })
    assert.equal(log.length, 2)
    assert.deepEqual(log[0], [call, null, undefined])
    assert.equal(log[1][0], call)
    assert.equal(log[1][1], null)
    assert.equal(JSON.parse(log[1][2]).error.code, code)
    // The provider's late answer finds nothing.
    assert.equal(calls.settle(call, JSON.stringify({ answer: YES })), null)
    assert.equal(log.length, 2)
    ctx.dispose()
  })
}

test('a deadline of a fast-path call: the withdrawal, then the outcome', async () => {
  const { ctx, calls, log } = recorded()
  // A deadline long enough that the call is handed out before it passes, on a loaded machine.
  const call = JSON.parse(ctx.ask(JSON.stringify({ questions: Q, timeoutMs: 200 }), null, null)).call
  assert.equal(typeof call, 'number')
  // Both come from the timer thread through this thread's queue, in order; not necessarily in
  // one turn (the thread may drain the first before the second is queued).
  while (log.length < 2) await new Promise((resolve) => setTimeout(resolve, 5))
  assert.equal(log.length, 2)
  assert.deepEqual(log[0], [call, null, undefined])
  assert.equal(JSON.parse(log[1][2]).error.code, 'ASK_TIMED_OUT')
  assert.equal(calls.settle(call, JSON.stringify({ answer: YES })), null)
  ctx.dispose()
})

test('through the package: an answer after the deadline is dropped, the signal fired before the asker resumed', async () => {
  const ctx = new Context()
  const log = []
  let answer
  ctx.userQuestions.registerProvider({
    ask({ signal }) {
      signal.addEventListener('abort', () => log.push('provider signal'))
      return new Promise((resolve) => (answer = resolve))
    },
  })
  // A deadline long enough that the provider is reached first, on a loaded machine.
  const asked = ctx.userQuestions.ask({ questions: Q, timeoutMs: 200 }).then(
    () => log.push('asker answered'),
    (err) => log.push(`asker ${err.code}`),
  )
  await asked
  assert.deepEqual(log, ['provider signal', 'asker ASK_TIMED_OUT'])
  answer(YES)
  await new Promise((resolve) => setImmediate(resolve))
  assert.deepEqual(log, ['provider signal', 'asker ASK_TIMED_OUT'])
  ctx.dispose()
})

test('through the package: a provider that never settles leaves the ask waiting until it is withdrawn', async () => {
  const ctx = new Context()
  const log = []
  ctx.userQuestions.registerProvider({
    ask({ signal }) {
      signal.addEventListener('abort', () => log.push('provider signal'))
      return new Promise(() => {})
    },
  })
  const controller = new AbortController()
  let settled = false
  const asked = ctx.userQuestions.ask({ questions: Q, signal: controller.signal }).then(
    () => log.push('asker answered'),
    (err) => log.push(`asker ${err.code}`),
  )
  asked.then(() => (settled = true))
  for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve))
  assert.equal(settled, false)
  controller.abort()
  await asked
  assert.deepEqual(log, ['provider signal', 'asker ASK_ABORTED'])
  ctx.dispose()
})

test('through the package: asks of two JS providers in two contexts settle with their own answers', async () => {
  const a = new Context()
  const b = new Context()
  const NO = { answers: [{ id: 'go', selected: ['No'] }] }
  a.userQuestions.registerProvider({ ask: async () => YES })
  b.userQuestions.registerProvider({ ask: () => NO })
  const asks = []
  for (let i = 0; i < 50; i++) {
    asks.push(a.userQuestions.ask({ questions: Q }), b.userQuestions.ask({ questions: Q }))
  }
  const answers = await Promise.all(asks)
  for (let i = 0; i < answers.length; i++) assert.deepEqual(answers[i], i % 2 === 0 ? YES : NO)
  a.dispose()
  b.dispose()
})

test('the bound functions: the same outcomes and errors as the methods they stand for', () => {
  const responder = new native.NativeAutoResponder('first', false)
  const answer = responder.answerer()
  assert.equal(answer(JSON.stringify(Q)), responder.answer(JSON.stringify(Q)))
  for (const bad of ['[]', '{}', '[{"id":1}]', 'not JSON', JSON.stringify([{ ...Q[0], options: 'x' }])]) {
    const viaMethod = (() => {
      try {
        return responder.answer(bad)
      } catch (err) {
        return `${err.code}: ${err.message}`
      }
    })()
    const viaBound = (() => {
      try {
        return answer(bad)
      } catch (err) {
        return `${err.code}: ${err.message}`
      }
    })()
    assert.equal(viaBound, viaMethod, bad)
  }
  assert.throws(() => answer(42), { code: 'INVALID_ARGUMENT' })

  const ctx = new native.NativeContext(null)
  const ask = ctx.asker()
  assert.throws(() => ask('[]'), { code: 'EMPTY_QUESTIONS' })
  assert.throws(() => ask(JSON.stringify(Q)), { code: 'NO_PROVIDER' })
  assert.throws(() => ask(undefined), { code: 'INVALID_ARGUMENT' })

  const calls = new native.NativeProviderCalls()
  const settle = calls.settler()
  assert.equal(settle(1.5, '{}'), null)
  assert.equal(settle(-1, '{}'), null)
  assert.throws(() => settle('1', '{}'), { code: 'INVALID_ARGUMENT' })

  const inbox = new native.NativeInbox()
  const answerTicket = inbox.answerer()
  assert.throws(() => answerTicket(1, JSON.stringify(YES)), { code: 'NOT_PENDING' })
  // As `answer`: an integer no ticket can have was never issued; a non-integer is no ticket.
  assert.throws(() => answerTicket(-1, JSON.stringify(YES)), { code: 'NOT_PENDING', message: 'question -1 is not pending' })
  assert.throws(() => answerTicket(1.5, JSON.stringify(YES)), { code: 'INVALID_ARGUMENT' })
  ctx.dispose()
})

test("an agent's bound asker: the same outcomes as the method with that agent", () => {
  const ctx = new native.NativeContext(null)
  ctx.registerAutoResponder(new native.NativeAutoResponder('first', false))
  const root = new native.NativeAgent('root', 0)
  const child = new native.NativeAgent('child', 0)
  const stranger = new native.NativeAgent('stranger', 0)
  ctx.enterAgent(root, null)
  ctx.enterAgent(child, root)
  const outcome = (f) => {
    try {
      return f()
    } catch (err) {
      return `${err.code}: ${err.message}`
    }
  }
  for (const agent of [root, child, stranger]) {
    const bound = ctx.asker(agent)
    for (const questions of [Q, []]) {
      const text = JSON.stringify(questions)
      assert.equal(
        outcome(() => bound(text)),
        outcome(() => ctx.ask(`{"questions":${text}}`, agent, null)),
        `${agent.id}: ${text}`,
      )
    }
  }
  assert.match(outcome(() => ctx.asker(child)(JSON.stringify(Q))), /^DELEGATED_CALLER/)
  assert.match(outcome(() => ctx.asker(stranger)(JSON.stringify(Q))), /^CALLER_NOT_LIVE/)
  // One bound asker, asked before and after its agent leaves: checked every time.
  const asRoot = ctx.asker(root)
  assert.deepEqual(JSON.parse(asRoot(JSON.stringify(Q))), { answer: YES })
  ctx.exitAgent(root)
  assert.match(outcome(() => asRoot(JSON.stringify(Q))), /^CALLER_NOT_LIVE/)
  ctx.dispose()
})

test('the bound functions read strings of every length, and text beyond ASCII, whole', () => {
  const responder = new native.NativeAutoResponder('first', false)
  const answer = responder.answerer()
  // Around 1,024 bytes of JSON (the first read's size): every length, 1 to 4 bytes a character.
  const lengths = [0, 1, 5000]
  for (let n = 100; n < 560; n++) lengths.push(n)
  for (const n of lengths) {
    for (const filler of ['x', 'é', '😀']) {
      const label = filler.repeat(n) || 'a'
      const q = [{ id: 'q', question: 'Q?', options: [{ label }, { label: `${label}!` }] }]
      const text = JSON.stringify(q)
      assert.equal(answer(text), responder.answer(text), `${n} × ${filler}`)
      assert.deepEqual(JSON.parse(answer(text)), { answers: [{ id: 'q', selected: [label] }] })
    }
  }
})

test('a JS provider asked from inside an inbox event (a drain of the queue): answered, and withdrawn', async () => {
  const { QuestionInbox } = require('..')
  const outer = new Context()
  const inbox = new QuestionInbox()
  outer.userQuestions.registerProvider(inbox)
  const inner = new Context()
  const log = []
  const answers = []
  inner.userQuestions.registerProvider({
    ask({ signal }) {
      signal.addEventListener('abort', () => log.push('provider signal'))
      return new Promise((resolve) => answers.push(resolve))
    },
  })
  const controller = new AbortController()
  let innerAsks = []
  inbox.subscribe((event) => {
    if (event.type !== 'resolved') return
    // Inside the drain that delivers the event: two asks of the JS provider start here.
    innerAsks = [
      inner.userQuestions.ask({ questions: Q }),
      inner.userQuestions.ask({ questions: Q, signal: controller.signal }).then(
        () => log.push('asker answered'),
        (err) => log.push(`asker ${err.code}`),
      ),
    ]
  })
  const outerAsk = outer.userQuestions.ask({ questions: Q })
  inboxNativeOfAnswer(inbox, 1, YES)
  assert.deepEqual(await outerAsk, YES)
  assert.equal(innerAsks.length, 2)
  for (let i = 0; i < 100 && answers.length < 2; i++) await new Promise((resolve) => setImmediate(resolve))
  assert.equal(answers.length, 2, 'the provider was called for both')
  answers[0](YES)
  assert.deepEqual(await innerAsks[0], YES)
  controller.abort()
  await innerAsks[1]
  assert.deepEqual(log, ['provider signal', 'asker ASK_ABORTED'])
  answers[1](YES)
  outer.dispose()
  inner.dispose()
})

// Copies (lib/snapshot.js): with a JS provider, questions and answers that are plain data go
// to the other side as a copy, the very data the core checked, instead of a parse of its text.

test('held questions: a fast-path payload leaves them out, and only then; alone, the call is its number', () => {
  const { ctx, calls } = recorded()
  const agent = new native.NativeAgent('root', 0)
  ctx.enterAgent(agent, null)
  const plain = ctx.ask(REQUEST, null, null, true)
  assert.equal(typeof plain, 'number')
  const bound = ctx.asker()(JSON.stringify(Q), true)
  assert.equal(typeof bound, 'number')
  assert.notEqual(plain, bound)
  const extras = JSON.parse(ctx.ask(JSON.stringify({ questions: Q, timeoutMs: 60000, key: 'k' }), agent, null, true))
  assert.deepEqual(Object.keys(extras), ['call', 'agentKey', 'expiresAt', 'key'])
  assert.deepEqual(Object.keys(JSON.parse(ctx.ask(REQUEST, agent, null, true))), ['call', 'agentKey'])
  for (const notHeld of [ctx.ask(REQUEST, null, null, false), ctx.asker()(JSON.stringify(Q), 1), ctx.asker()(JSON.stringify(Q))]) {
    assert.deepEqual(JSON.parse(notHeld).questions, Q)
  }
  for (const call of [plain, bound, extras.call]) assert.notEqual(calls.settle(call, JSON.stringify({ answer: YES })), null)
  ctx.dispose()
})

test('the bound settle returns "" when the outcome is the answer text it was given, else the text', () => {
  const { ctx, calls } = recorded()
  const settle = calls.settler()
  const given = JSON.stringify({ answer: YES })
  assert.equal(settle(JSON.parse(ctx.ask(REQUEST, null, null)).call, given), '')
  // Keys out of wire order: the core's text differs, and comes back whole.
  const reordered = '{"answer":{"answers":[{"selected":["Yes"],"id":"go"}]}}'
  assert.deepEqual(JSON.parse(settle(JSON.parse(ctx.ask(REQUEST, null, null)).call, reordered)), { answer: YES })
  // An error is never given back as "" (the core re-codes errors: OK is not a provider's).
  const ok = JSON.stringify({ error: { code: 'OK', message: 'fine' } })
  assert.equal(JSON.parse(settle(JSON.parse(ctx.ask(REQUEST, null, null)).call, ok)).error.code, 'PROVIDER_FAILED')
  const failed = JSON.stringify({ error: { code: 'PROVIDER_FAILED', message: 'boom' } })
  assert.equal(settle(JSON.parse(ctx.ask(REQUEST, null, null)).call, failed), failed)
  // A bad answer in strict mode: the error's text.
  ctx.strict = true
  const bad = JSON.stringify({ answer: { answers: [{ id: 'go', selected: ['Maybe'] }] } })
  assert.equal(JSON.parse(settle(JSON.parse(ctx.ask(REQUEST, null, null)).call, bad)).error.code, 'BAD_ANSWER')
  // The method stands for the whole text, always.
  assert.equal(calls.settle(JSON.parse(ctx.ask(REQUEST, null, null)).call, given), given)
  ctx.dispose()
})

test('through the package: the provider gets its own copy of plain questions, keys in wire order, read once', async () => {
  const ctx = new Context()
  /** @type {any[]} */
  const seen = []
  ctx.userQuestions.registerProvider({
    ask(request) {
      seen.push(request.questions)
      const answer = { answers: request.questions.map((q) => ({ id: q.id, selected: [q.options[0].label] })) }
      request.questions[0].options[0].label = 'changed by the provider'
      return answer
    },
  })
  let reads = 0
  const question = {
    header: 'Go',
    get question() {
      reads++
      return reads === 1 ? 'Proceed?' : 'not what the core checked'
    },
    options: [{ description: 'go on', label: 'Yes' }, { label: 'No' }],
    id: 'go',
    multiSelect: false,
  }
  const asked = ctx.userQuestions.ask({ questions: [question] })
  // The asker changes its data while the ask waits: the provider has what was checked.
  question.options[0].label = 'changed by the asker'
  assert.deepEqual(await asked, YES)
  assert.equal(reads, 1, 'the getter ran once')
  assert.equal(seen.length, 1)
  const [got] = seen[0]
  assert.notEqual(got, question)
  assert.deepEqual(Object.keys(got), ['id', 'question', 'header', 'options', 'multiSelect'])
  assert.deepEqual(Object.keys(got.options[0]), ['label', 'description'])
  assert.deepEqual(got, {
    id: 'go',
    question: 'Proceed?',
    header: 'Go',
    options: [{ label: 'changed by the provider', description: 'go on' }, { label: 'No' }],
    multiSelect: false,
  })
  assert.equal(question.options[0].label, 'changed by the asker', "the provider's change did not reach the asker")
  ctx.dispose()
})

test('through the package: the asker gets its own copy of a plain answer, read once', async () => {
  const ctx = new Context()
  let reads = 0
  const answer = {
    answers: [
      {
        get selected() {
          reads++
          return reads === 1 ? ['Yes'] : ['Maybe']
        },
        id: 'go',
        custom: 'and quickly',
      },
    ],
  }
  ctx.userQuestions.registerProvider({
    ask() {
      // Changed after it was returned: the asker has what was checked.
      setImmediate(() => (answer.answers[0].id = 'changed by the provider'))
      return answer
    },
  })
  const got = await ctx.userQuestions.ask({ questions: Q })
  assert.deepEqual(got, { answers: [{ id: 'go', selected: ['Yes'], custom: 'and quickly' }] })
  assert.deepEqual(Object.keys(got.answers[0]), ['id', 'selected', 'custom'])
  assert.equal(reads, 1, 'the getter ran once')
  assert.notEqual(got, answer)
  await new Promise((resolve) => setImmediate(resolve))
  assert.equal(got.answers[0].id, 'go')
  // Strict checking refuses what the core refuses, copy or not: `selected` now reads
  // ['Maybe'], not an option.
  answer.answers[0].id = 'go'
  ctx.userQuestions.strict = true
  await assert.rejects(ctx.userQuestions.ask({ questions: Q }), { code: 'BAD_ANSWER' })
  assert.equal(reads, 2)
  ctx.dispose()
})

test('through the package: an answer returned as it is is copied before the provider can change it', async () => {
  const ctx = new Context()
  ctx.userQuestions.registerProvider({
    ask() {
      const answer = { answers: [{ id: 'go', selected: ['Yes'] }] }
      // Changed in the very next microtask: the asker still gets what was returned.
      queueMicrotask(() => (answer.answers[0].selected = ['No', 'No']))
      return answer
    },
  })
  assert.deepEqual(await ctx.userQuestions.ask({ questions: Q }), YES)
  ctx.dispose()
})

test('through the package: an answer, or questions, whose reading throws: a provider failure, a refusal, never a crash', async () => {
  const ctx = new Context()
  const boom = () => {
    throw new Error('boom')
  }
  const shapes = [
    // A getter on an item, on `answers`, on an array element; returned as is, or through a
    // promise.
    () => ({ answers: [{ id: 'go', get selected() { return boom() } }] }),
    () => ({ get answers() { return boom() } }),
    () => {
      const answers = [{ id: 'go', selected: ['Yes'] }]
      Object.defineProperty(answers, 0, { get: boom, enumerable: true })
      return { answers }
    },
  ]
  for (const returned of ['through a promise', 'as it is']) {
    const each = new Context()
    let asked = 0
    const next = () => shapes[asked++]()
    each.userQuestions.registerProvider(
      returned === 'as it is' ? { ask: next } : { ask: async () => next() },
    )
    for (let i = 0; i < shapes.length; i++) {
      await assert.rejects(
        each.userQuestions.ask({ questions: Q }),
        {
          code: 'PROVIDER_FAILED',
          message: 'the user-questions provider answered with something that is not an answer: boom',
        },
        `shape ${i}, ${returned}`,
      )
    }
    each.dispose()
  }
  // Questions whose reading throws are refused, as questions JSON cannot carry, also when a JS
  // provider is registered (their copy is read first).
  for (const provider of [undefined, { ask: () => YES }]) {
    if (provider !== undefined) ctx.userQuestions.registerProvider(provider)
    await questionsThatThrow(ctx, boom)
  }
  ctx.dispose()
})

/**
 * @param {Context} ctx
 * @param {() => never} boom
 */
async function questionsThatThrow(ctx, boom) {
  const questions = [{ id: 'go', get question() { return boom() } }]
  await assert.rejects(ctx.userQuestions.ask({ questions }), {
    code: 'INVALID_REQUEST',
    message: 'questions must be JSON data: boom',
  })
  await assert.rejects(
    ctx.userQuestions.ask({
      get questions() {
        return boom()
      },
    }),
    { code: 'INVALID_REQUEST', message: 'questions must be JSON data: boom' },
  )
}

test('through the package: an answer that is not plain, taken as given, reaches the asker as a parse of its text', async () => {
  // A class instance with exactly the wire fields: no copy is made, and the core's outcome text
  // is the text sent (settle returns ""), which the asker gets parsed.
  class Answer {
    constructor() {
      this.answers = [{ id: 'go', selected: ['Yes'] }]
    }
  }
  const given = new Answer()
  const ctx = new Context()
  ctx.userQuestions.registerProvider({ ask: () => given })
  const got = await ctx.userQuestions.ask({ questions: Q })
  assert.deepEqual(got, YES)
  assert.equal(Object.getPrototypeOf(got), Object.prototype)
  assert.notEqual(got.answers, given.answers)
  ctx.dispose()
})

test('through the package: data that is not plain takes the JSON path, with the same outcomes and messages', async () => {
  const withProvider = new Context()
  /** @type {any[]} */
  const seen = []
  withProvider.userQuestions.registerProvider({
    ask(request) {
      seen.push(request.questions)
      return { answers: request.questions.map((q) => ({ id: q.id, selected: [], note: 'not a wire field' })) }
    },
  })
  const withoutProvider = new Context()
  withoutProvider.userQuestions.registerProvider(new AutoResponder('first'))
  class Question {
    constructor() {
      this.id = 'c'
      this.question = 'A class?'
    }
  }
  const cases = [
    // Refused: the same code and message with a JS provider (copies) as without.
    [{ question: 'a\ud800', id: 'x\udc00' }],
    [{ id: 'x\udc00', question: 'a\ud800' }],
    [{ id: 5, question: 'q' }],
    [{ id: 'a', question: 'q', header: null }],
    [{ id: 'a', question: 'q', options: [{ label: 'x', description: 1 }] }],
    [{ id: 'a', question: 'q', intent: { kind: 'plan-review' } }],
    [{ id: 'a', question: 'q' }, { id: 'a', question: 'r' }],
    [],
    // Answered: what the provider sees is the wire fields of what the core read.
    [{ id: 'a', question: 'q', extra: 'not a wire field' }],
    [new Question()],
    [{ id: 'j', question: 'toJSON?', toJSON: () => ({ id: 'j', question: 'from toJSON' }) }],
  ]
  const outcome = async (ctx, questions) => {
    try {
      return await ctx.userQuestions.ask({ questions })
    } catch (err) {
      return `${err.code}: ${err.message}`
    }
  }
  for (const questions of cases) {
    const a = await outcome(withProvider, questions)
    const b = await outcome(withoutProvider, questions)
    if (typeof b === 'string') assert.equal(a, b, JSON.stringify(questions))
    else assert.deepEqual(a, { answers: questions.map((q) => ({ id: q.id, selected: [] })) }, 'the unknown field dropped')
  }
  assert.deepEqual(seen, [
    [{ id: 'a', question: 'q' }],
    [{ id: 'c', question: 'A class?' }],
    [{ id: 'j', question: 'from toJSON' }],
  ])
  withProvider.dispose()
  withoutProvider.dispose()
})

test("through the package: the request's questions are read once, copied or not", async () => {
  const ctx = new Context()
  ctx.userQuestions.registerProvider({ ask: (request) => ({ answers: [{ id: request.questions[0].id, selected: [] }] }) })
  for (const question of [{ id: 'plain', question: 'Q?' }, { id: 'other', question: 'Q?', extra: 1 }]) {
    let reads = 0
    const request = {
      get questions() {
        reads++
        return [question]
      },
    }
    assert.deepEqual(await ctx.userQuestions.ask(request), { answers: [{ id: question.id, selected: [] }] })
    assert.equal(reads, 1, question.id)
  }
  ctx.dispose()
})

test('through the package: a toJSON given to every object turns the copies off', async () => {
  const ctx = new Context()
  /** @type {any[]} */
  const seen = []
  ctx.userQuestions.registerProvider({
    ask(request) {
      seen.push(request.questions)
      return { answers: [{ id: 'go', selected: ['Oui'] }] }
    },
  })
  Object.defineProperty(Object.prototype, 'toJSON', {
    value() {
      return this.label === 'Yes' ? { label: 'Oui' } : this
    },
    configurable: true,
  })
  let got
  try {
    got = await ctx.userQuestions.ask({ questions: Q })
  } finally {
    delete Object.prototype.toJSON
  }
  assert.deepEqual(seen[0][0].options, [{ label: 'Oui' }, { label: 'No' }], 'the provider saw what the core checked')
  assert.deepEqual(got, { answers: [{ id: 'go', selected: ['Oui'] }] })
  ctx.dispose()
})

/** Answers `ticket` from another thread: its events and settlement reach this thread in one drain. */
function inboxNativeOfAnswer(inbox, ticket, answer) {
  const { inboxNativeOf } = require('../lib/inbox.js')
  inboxNativeOf(inbox).answerOnAnotherThread(ticket, JSON.stringify(answer))
}

test('through the package: a provider failing as its deadline fires — when the asker gets the time-out, the provider heard the withdrawal first', async () => {
  // The provider rejects at about the time its deadline fires, on the timer thread: either
  // the provider's error is what the asker gets, or the deadline is — and then the provider's
  // signal aborted before the asker resumed (§4.7), also when the withdrawal was claimed as
  // the rejection arrived. Counted over many asks, the two racing at random.
  const outcomes = { provider: 0, deadline: 0 }
  for (let round = 0; round < 200; round++) {
    const ctx = new Context()
    /** @type {Map<string, string[]>} */
    const log = new Map()
    ctx.userQuestions.registerProvider({
      ask({ questions, signal }) {
        const events = /** @type {string[]} */ (log.get(questions[0].header))
        events.push('asked')
        signal.addEventListener('abort', () => events.push('signal'))
        return new Promise((resolve, reject) => {
          setTimeout(() => reject(new UserQuestionError('no', 'ASK_CANCELLED')), 2)
        })
      },
    })
    const asks = []
    for (let i = 0; i < 20; i++) {
      const header = `a${i}`
      const events = []
      log.set(header, events)
      asks.push(
        ctx.userQuestions
          .ask({ questions: [{ id: 'go', question: 'Go?', header }], timeoutMs: 2 })
          .then(
            () => events.push('answered'),
            (/** @type {UserQuestionError} */ e) => events.push(e.code),
          ),
      )
    }
    await Promise.all(asks)
    for (const [header, events] of log) {
      const last = events.at(-1)
      if (last === 'ASK_CANCELLED') {
        outcomes.provider++
      } else {
        assert.equal(last, 'ASK_TIMED_OUT', `${header}: ${events}`)
        outcomes.deadline++
        // Asked: the signal aborted before the asker resumed. (Withdrawn before its provider
        // ran, an ask never reaches it, and there is no signal to hear.)
        if (events.includes('asked')) assert.ok(events.indexOf('signal') >= 0, `${header}: ${events}`)
      }
    }
    ctx.dispose()
  }
  assert.ok(outcomes.deadline > 0, `some asks timed out: ${JSON.stringify(outcomes)}`)
})
