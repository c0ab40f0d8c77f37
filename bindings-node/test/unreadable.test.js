// What cannot be read: a request, reviewPlan's options and the tool's caller options whose
// fields throw when read (a getter, a Proxy's trap, a revoked Proxy), and signals that look
// like an AbortSignal but throw. Each is refused as a value of the wrong type, with that
// field's own code and message (§3, §10, §16, §20), numbered and journaled like any refusal
// (§18); the tool answers with its failure form (§9). Never a plain Error, never an escape.
'use strict'

const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const { Agent, AskUserQuestionTool, Context, UserQuestionError } = require('..')

const QUESTIONS = [{ id: 'go', question: 'Proceed?', options: [{ label: 'Yes' }, { label: 'No' }] }]
const YES = { answers: [{ id: 'go', selected: ['Yes'] }] }
const BAD_TIMEOUT = 'timeoutMs must be an integer from 1 to 2147483647'
const BAD_KEY = 'key must be a non-empty string of at most 256 characters'
const NOT_A_SIGNAL = 'signal must be an AbortSignal'
const NOT_LIVE = 'human interaction requires the exact live calling agent when an agent is supplied'

function revoked() {
  const { proxy, revoke } = Proxy.revocable({}, {})
  revoke()
  return proxy
}

/** `fields` plus a getter `name` that throws. */
function throwingGetter(name, fields = {}) {
  return Object.defineProperty({ ...fields }, name, {
    get() {
      throw new Error(`no ${name} for you`)
    },
    enumerable: true,
  })
}

/** Signals that pass for an AbortSignal at first sight but throw when used. */
const LOOK_ALIKE_SIGNALS = {
  'an aborted getter that throws': throwingGetter('aborted', { addEventListener() {}, removeEventListener() {} }),
  'an addEventListener that throws': {
    aborted: false,
    addEventListener() {
      throw new Error('no listeners here')
    },
    removeEventListener() {},
  },
  'a revoked Proxy': revoked(),
}

/** A signal whose `aborted` answers once, then throws (a fresh one per use). */
function abortedOnce() {
  let reads = 0
  return {
    get aborted() {
      if (reads++ > 0) throw new Error('asked twice')
      return false
    },
    addEventListener() {},
    removeEventListener() {},
  }
}

/** Every field of a request whose reading throws, and how it is refused. */
const UNREADABLE_FIELDS = [
  ['timeoutMs', 'INVALID_REQUEST', BAD_TIMEOUT],
  ['key', 'INVALID_REQUEST', BAD_KEY],
  ['signal', 'INVALID_REQUEST', NOT_A_SIGNAL],
  ['agent', 'CALLER_NOT_LIVE', NOT_LIVE],
]

function withProvider(options) {
  const ctx = new Context(options)
  const reached = []
  ctx.userQuestions.registerProvider({
    ask(request) {
      reached.push(request)
      return YES
    },
  })
  return { ctx, reached }
}

async function refusal(promise) {
  try {
    await promise
  } catch (err) {
    assert.ok(err instanceof UserQuestionError, `a plain ${err?.constructor?.name}: ${err?.message}`)
    return { code: err.code, message: err.message }
  }
  assert.fail('expected a rejection')
}

test('ask(): a request field that throws when read is refused with its own code and message, journaled', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'uq-unreadable-'))
  try {
    const file = path.join(dir, 'asks.jsonl')
    const { ctx, reached } = withProvider({ journal: file })
    const cases = [
      [revoked(), 'INVALID_REQUEST', 'request must be an object'],
      ...UNREADABLE_FIELDS.map(([name, code, message]) => [throwingGetter(name, { questions: QUESTIONS }), code, message]),
      ...Object.values(LOOK_ALIKE_SIGNALS).map((signal) => [{ questions: QUESTIONS, signal }, 'INVALID_REQUEST', NOT_A_SIGNAL]),
      [{ questions: QUESTIONS, signal: abortedOnce() }, 'INVALID_REQUEST', NOT_A_SIGNAL],
      // Not an Agent of this package, though they may look like one: not the live instance.
      [{ questions: QUESTIONS, agent: revoked() }, 'CALLER_NOT_LIVE', NOT_LIVE],
      [{ questions: QUESTIONS, agent: Object.create(Agent.prototype) }, 'CALLER_NOT_LIVE', NOT_LIVE],
      [{ questions: QUESTIONS, agent: throwingGetter('id') }, 'CALLER_NOT_LIVE', NOT_LIVE],
    ]
    for (const [request, code, message] of cases) {
      assert.deepEqual(await refusal(ctx.userQuestions.ask(request)), { code, message })
    }
    assert.equal(reached.length, 0)
    const lines = fs.readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l))
    assert.deepEqual(
      lines.map((l) => [l.event, l.ask, l.code, l.message]),
      cases.map(([, code, message], i) => ['refused', i + 1, code, message]),
    )
    ctx.dispose()
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('reviewPlan(): an option that throws when read is refused with its own code and message', async () => {
  const { ctx, reached } = withProvider()
  const cases = [
    [revoked(), 'INVALID_REQUEST', 'options must be an object'],
    [throwingGetter('question'), 'INVALID_REQUEST', 'question must be a string'],
    ...UNREADABLE_FIELDS.filter(([name]) => name !== 'key').map(([name, code, message]) => [
      throwingGetter(name),
      code,
      message,
    ]),
    ...Object.values(LOOK_ALIKE_SIGNALS).map((signal) => [{ signal }, 'INVALID_REQUEST', NOT_A_SIGNAL]),
    [{ signal: abortedOnce() }, 'INVALID_REQUEST', NOT_A_SIGNAL],
  ]
  for (const [options, code, message] of cases) {
    assert.deepEqual(await refusal(ctx.userQuestions.reviewPlan('1. Ship it.', options)), { code, message })
  }
  assert.equal(reached.length, 0)
})

test("the tool: a caller option that throws when read is a failure result with its own code and message, never a rejection", async () => {
  const { ctx, reached } = withProvider()
  const tool = new AskUserQuestionTool(ctx)
  const args = { questions: [{ id: 'go', question: 'Proceed?' }] }
  const cases = [
    // Every option unreadable: the signal is looked at first.
    [revoked(), 'INVALID_REQUEST', NOT_A_SIGNAL],
    ...UNREADABLE_FIELDS.map(([name, code, message]) => [throwingGetter(name), code, message]),
    ...Object.values(LOOK_ALIKE_SIGNALS).map((signal) => [{ signal }, 'INVALID_REQUEST', NOT_A_SIGNAL]),
    [{ signal: abortedOnce() }, 'INVALID_REQUEST', NOT_A_SIGNAL],
  ]
  for (const [exec, code, message] of cases) {
    assert.deepEqual(await tool.execute(args, exec), {
      isError: true,
      error: { name: 'UserQuestionError', code, message },
      content: [{ type: 'text', text: `Error: ${message}` }],
    })
  }
  assert.equal(reached.length, 0)
})

test('a look-alike signal whose removeEventListener throws: the answered ask still resolves with its answer', async () => {
  const { ctx, reached } = withProvider()
  const listeners = []
  const signal = {
    aborted: false,
    addEventListener(type, listener) {
      listeners.push([type, listener])
    },
    removeEventListener() {
      throw new Error('cannot remove')
    },
  }
  assert.deepEqual(await ctx.userQuestions.ask({ questions: QUESTIONS, signal }), YES)
  assert.deepEqual(await ctx.userQuestions.reviewPlan('plan', { signal }), { decision: 'revise' })
  const tool = new AskUserQuestionTool(ctx)
  const result = await tool.execute({ questions: [{ id: 'go', question: 'Proceed?' }] }, { signal })
  assert.equal(result.isError, false, JSON.stringify(result))
  assert.equal(reached.length, 3)
  // It was listened to (one listener per ask: each was taken off, as far as it let us).
  assert.deepEqual(
    listeners.map(([type]) => type),
    ['abort', 'abort', 'abort'],
  )
})

test('an object made from Agent.prototype without the constructor is not an Agent: enter() refuses it', () => {
  const ctx = new Context()
  const fake = Object.create(Agent.prototype)
  assert.throws(() => ctx.agents.enter(fake), {
    name: 'UserQuestionError',
    code: 'INVALID_ARGUMENT',
    message: 'enter() needs an Agent',
  })
  assert.throws(() => ctx.agents.enter(new Agent('child'), fake), {
    code: 'INVALID_ARGUMENT',
    message: 'the owner must be an Agent (or absent for a runtime root)',
  })
  assert.deepEqual(ctx.agents.list(), [])
})
