// Part II of the contract on the Node surface: deadlines and keys on requests (§16, §20),
// inbox.extend, pending questions' askedAt/expiresAt/key, the provider's request, the tool's
// caller options, reviewPlan (§17), the journal (§18), and what keeps the process alive.
'use strict'

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const { Agent, AskUserQuestionTool, AutoResponder, Context, QuestionInbox, UserQuestionError } = require('..')

const PKG = path.resolve(__dirname, '..')
const Q = [{ id: 'go', question: 'Proceed?', options: [{ label: 'Yes' }, { label: 'No' }] }]
const YES = { answers: [{ id: 'go', selected: ['Yes'] }] }
const RFC3339_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const BAD_TIMEOUT = 'timeoutMs must be an integer from 1 to 2147483647'
const BAD_KEY = 'key must be a non-empty string of at most 256 characters'

function withInbox() {
  const ctx = new Context()
  const inbox = new QuestionInbox()
  ctx.userQuestions.registerProvider(inbox)
  return { ctx, inbox }
}

test('timeoutMs and key that are not valid are INVALID_REQUEST with the exact messages, before the provider', async () => {
  const { ctx, inbox } = withInbox()
  for (const timeoutMs of [0, -1, 1.5, 2147483648, NaN, Infinity, '5', true, null, 10n]) {
    await assert.rejects(ctx.userQuestions.ask({ questions: Q, timeoutMs }), {
      name: 'UserQuestionError',
      code: 'INVALID_REQUEST',
      message: BAD_TIMEOUT,
    })
  }
  for (const key of ['', 'k'.repeat(257), 5, null, {}, 10n, () => 'k', '\ud800', 'k\udfff']) {
    await assert.rejects(ctx.userQuestions.ask({ questions: Q, key }), {
      code: 'INVALID_REQUEST',
      message: BAD_KEY,
    })
  }
  // Checked before §3 #1: an aborted signal does not hide them.
  await assert.rejects(ctx.userQuestions.ask({ questions: Q, timeoutMs: 0, signal: AbortSignal.abort() }), {
    message: BAD_TIMEOUT,
  })
  assert.deepEqual(inbox.pending(), [])
  // The limits themselves are valid.
  const longest = ctx.userQuestions.ask({ questions: Q, timeoutMs: 2147483647, key: 'k'.repeat(256) })
  const shortestKey = ctx.userQuestions.ask({ questions: Q, timeoutMs: 1e9, key: 'k' })
  assert.equal(inbox.pending().length, 2)
  ctx.dispose()
  await assert.rejects(longest, { code: 'ASK_ABORTED' })
  await assert.rejects(shortestKey, { code: 'ASK_ABORTED' })
})

test('a deadline settles ASK_TIMED_OUT with the request’s own timeoutMs, never an answer', async () => {
  const ctx = new Context()
  ctx.userQuestions.registerProvider({ ask: () => new Promise(() => {}) })
  await assert.rejects(ctx.userQuestions.ask({ questions: Q, timeoutMs: 15 }), (err) => {
    assert.ok(err instanceof UserQuestionError)
    assert.equal(err.code, 'ASK_TIMED_OUT')
    assert.equal(err.message, 'the user did not answer ask_user_question within 15 ms')
    return true
  })
})

test('an answer before the deadline wins', async () => {
  const { ctx, inbox } = withInbox()
  const asked = ctx.userQuestions.ask({ questions: Q, timeoutMs: 60000 })
  inbox.answer(1, YES)
  assert.deepEqual(await asked, YES)
})

test('pending questions carry askedAt, expiresAt and key, in that order', () => {
  const { ctx, inbox } = withInbox()
  ctx.userQuestions.ask({ questions: Q, timeoutMs: 60000, key: 'call_1' }).catch(() => {})
  ctx.userQuestions.ask({ questions: Q }).catch(() => {})
  const [withDeadline, without] = inbox.pending()
  assert.deepEqual(Object.keys(withDeadline), ['ticket', 'questions', 'askedAt', 'expiresAt', 'key'])
  assert.match(withDeadline.askedAt, RFC3339_MS)
  assert.match(withDeadline.expiresAt, RFC3339_MS)
  assert.ok(withDeadline.expiresAt > withDeadline.askedAt)
  assert.equal(withDeadline.key, 'call_1')
  assert.deepEqual(Object.keys(without), ['ticket', 'questions', 'askedAt'])
  ctx.dispose()
})

test('inbox.extend: a later expiresAt and an extended event; undefined without a deadline; bad input', async () => {
  const { ctx, inbox } = withInbox()
  const events = []
  inbox.subscribe((e) => events.push(e))
  const asked = ctx.userQuestions.ask({ questions: Q, timeoutMs: 2000 })
  const plain = ctx.userQuestions.ask({ questions: Q })
  const before = inbox.pending()[0].expiresAt
  const expiresAt = inbox.extend(1, 60000)
  assert.match(expiresAt, RFC3339_MS)
  assert.ok(expiresAt > before)
  assert.equal(inbox.pending()[0].expiresAt, expiresAt)
  assert.deepEqual(events.at(-1), { type: 'extended', ticket: 1, expiresAt })
  // An extension that ends before the deadline changes nothing but still answers it.
  assert.equal(inbox.extend(1, 1), expiresAt)
  assert.equal(inbox.extend(2, 1000), undefined)
  for (const ms of [0, -5, 1.5, 2147483648, NaN, '10']) {
    assert.throws(() => inbox.extend(1, ms), {
      name: 'UserQuestionError',
      code: 'INVALID_ARGUMENT',
      message: 'ms must be an integer from 1 to 2147483647',
    })
  }
  assert.throws(() => inbox.extend(9, 10), { code: 'NOT_PENDING', message: 'question 9 is not pending' })
  inbox.answer(1, YES)
  assert.deepEqual(await asked, YES)
  assert.throws(() => inbox.extend(1, 10), { code: 'ALREADY_RESOLVED' })
  inbox.cancel(2)
  await assert.rejects(plain, { code: 'ASK_CANCELLED' })
})

test('the timed-out question reports outcome timed_out to subscribers', async () => {
  const { ctx, inbox } = withInbox()
  const events = []
  inbox.subscribe((e) => events.push(e.type === 'resolved' ? e.outcome : e.type))
  await assert.rejects(ctx.userQuestions.ask({ questions: Q, timeoutMs: 5 }), { code: 'ASK_TIMED_OUT' })
  assert.deepEqual(events, ['requested', 'timed_out'])
})

test("a JS provider's request carries expiresAt and key when the ask has them", async () => {
  const ctx = new Context()
  const seen = []
  ctx.userQuestions.registerProvider({
    ask(request) {
      seen.push(request)
      return YES
    },
  })
  await ctx.userQuestions.ask({ questions: Q, timeoutMs: 60000, key: 'k1' })
  await ctx.userQuestions.ask({ questions: Q })
  for (const request of seen) assert.deepEqual(request.questions, Q)
  assert.deepEqual(Object.keys(seen[0]), ['questions', 'signal', 'expiresAt', 'key'])
  assert.match(seen[0].expiresAt, RFC3339_MS)
  assert.equal(seen[0].key, 'k1')
  assert.ok(!('expiresAt' in seen[1]))
  assert.ok(!('key' in seen[1]))
  assert.ok(seen[1].signal instanceof AbortSignal)
})

test("the tool takes timeoutMs and key from its caller: a deadline is the failure form, bad options too", async () => {
  const ctx = new Context()
  const seen = []
  ctx.userQuestions.registerProvider({
    ask(request) {
      seen.push(request)
      return new Promise(() => {})
    },
  })
  const tool = new AskUserQuestionTool(ctx)
  const args = { questions: [{ id: 'go', question: 'Proceed?' }], timeoutMs: 1, key: 'from the model' }
  const message = 'the user did not answer ask_user_question within 10 ms'
  assert.deepEqual(await tool.execute(args, { timeoutMs: 10, key: 'call_7' }), {
    isError: true,
    error: { name: 'UserQuestionError', code: 'ASK_TIMED_OUT', message },
    content: [{ type: 'text', text: `Error: ${message}` }],
  })
  assert.equal(seen[0].key, 'call_7')
  for (const [exec, msg] of [
    [{ timeoutMs: 0 }, BAD_TIMEOUT],
    [{ timeoutMs: 2.5 }, BAD_TIMEOUT],
    [{ timeoutMs: NaN }, BAD_TIMEOUT],
    [{ timeoutMs: 10n }, BAD_TIMEOUT],
    [{ key: '' }, BAD_KEY],
    [{ key: 7 }, BAD_KEY],
    [{ key: 10n }, BAD_KEY],
    [{ key: () => 'k' }, BAD_KEY],
    // A lone surrogate is no character (as in Python): the key's message, not JSON's.
    [{ key: '\ud800' }, BAD_KEY],
    [{ key: 'a\udc00' }, BAD_KEY],
  ]) {
    const result = await tool.execute(args, exec)
    assert.equal(result.isError, true)
    assert.deepEqual(result.error, { name: 'UserQuestionError', code: 'INVALID_REQUEST', message: msg })
  }
  assert.equal(seen.length, 1)
})

test('reviewPlan: decisions from the answer, the plan-review question, errors as for ask', async () => {
  const { ctx, inbox } = withInbox()
  const approve = ctx.userQuestions.reviewPlan('1. Add a table.\n2. Backfill.', { question: 'Ship it?' })
  const [pending] = inbox.pending()
  assert.equal(pending.questions[0].question, 'Ship it?')
  assert.equal(pending.questions[0].detail, '1. Add a table.\n2. Backfill.')
  assert.deepEqual(pending.questions[0].intent, { kind: 'plan-review', approve: 'Approve' })
  inbox.answer(pending.ticket, { answers: [{ id: 'plan', selected: ['Approve'] }] })
  assert.deepEqual(await approve, { decision: 'approved' })

  const revise = ctx.userQuestions.reviewPlan('plan')
  inbox.answer(2, { answers: [{ id: 'plan', selected: [], custom: 'split step 2' }] })
  assert.deepEqual(await revise, { decision: 'revise', feedback: 'split step 2' })

  const dismissed = ctx.userQuestions.reviewPlan('plan')
  inbox.answer(3, { answers: [{ id: 'plan', selected: [] }] })
  assert.deepEqual(await dismissed, { decision: 'dismissed' })

  await assert.rejects(ctx.userQuestions.reviewPlan('   '), {
    name: 'UserQuestionError',
    code: 'INVALID_REQUEST',
    message: 'review_plan requires a plan',
  })
  await assert.rejects(ctx.userQuestions.reviewPlan('plan', { timeoutMs: 0 }), { message: BAD_TIMEOUT })
  await assert.rejects(ctx.userQuestions.reviewPlan('plan', { signal: AbortSignal.abort() }), { code: 'ASK_ABORTED' })
  await assert.rejects(ctx.userQuestions.reviewPlan('plan', { timeoutMs: 5 }), { code: 'ASK_TIMED_OUT' })

  const auto = new Context()
  auto.userQuestions.registerProvider(new AutoResponder('first'))
  assert.notEqual((await auto.userQuestions.reviewPlan('plan')).decision, 'approved')
})

test('a journal records every ask as JSON lines', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'uq-journal-'))
  try {
    const file = path.join(dir, 'asks.jsonl')
    const ctx = new Context({ journal: file })
    ctx.userQuestions.registerProvider(new AutoResponder('first'))
    await ctx.userQuestions.ask({ questions: Q, key: 'k' })
    await assert.rejects(ctx.userQuestions.ask({ questions: [] }), { code: 'EMPTY_QUESTIONS' })
    const lines = fs.readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l))
    assert.deepEqual(
      lines.map((l) => [l.event, l.ask]),
      [
        ['asked', 1],
        ['settled', 1],
        ['refused', 2],
      ],
    )
    assert.equal(lines[0].key, 'k')
    assert.equal(lines[1].outcome, 'answered')
    assert.equal(lines[2].code, 'EMPTY_QUESTIONS')
    assert.throws(() => new Context({ journal: 42 }), { code: 'INVALID_ARGUMENT' })
    // null is no journal, as absent is.
    new Context({ journal: null }).dispose()
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

/** How many of this process's descriptors are open on `file`. */
function descriptorsOn(file) {
  let count = 0
  for (const fd of fs.readdirSync('/proc/self/fd')) {
    try {
      if (fs.readlinkSync(`/proc/self/fd/${fd}`) === file) count++
    } catch {}
  }
  return count
}

test('a disposed context lets its journal file go once no ask waits, long before it is collected', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'uq-journal-'))
  try {
    const file = path.join(dir, 'asks.jsonl')
    const ctx = new Context({ journal: file })
    ctx.userQuestions.registerProvider(new QuestionInbox())
    const waiting = ctx.userQuestions.ask({ questions: Q })
    assert.equal(descriptorsOn(file), 1)
    ctx.dispose()
    await assert.rejects(waiting, { code: 'ASK_ABORTED' })
    // The context is still referenced (here, and in a host until the garbage collector runs).
    assert.equal(descriptorsOn(file), 0)
    const lines = fs.readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l))
    assert.deepEqual(lines.map((l) => [l.event, l.ask]), [['asked', 1], ['settled', 1]])
    assert.equal(lines[1].outcome, 'aborted')
    assert.ok(ctx)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('asks refused before the core can read them are numbered and journaled like any refused ask', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'uq-journal-'))
  try {
    const file = path.join(dir, 'asks.jsonl')
    const ctx = new Context({ journal: file })
    ctx.userQuestions.registerProvider(new AutoResponder('first'))
    const root = new Agent('root')
    ctx.agents.enter(root)
    const cyclic = [{ id: 'go', question: 'Proceed?' }]
    cyclic[0].self = cyclic
    const refusals = [
      [null, 'request must be an object'],
      ['ask', 'request must be an object'],
      [[Q], 'request must be an object'],
      [{ questions: cyclic, agent: root }, /^questions must be JSON data: /],
      [{ questions: [{ id: 'go', question: 'Proceed?', n: 1n }] }, /^questions must be JSON data: /],
      [{ questions: Q, timeoutMs: 10n }, BAD_TIMEOUT],
      [{ questions: Q, signal: 'x' }, 'signal must be an AbortSignal'],
    ]
    for (const [request, message] of refusals) {
      await assert.rejects(ctx.userQuestions.ask(/** @type {any} */ (request)), { code: 'INVALID_REQUEST', message })
    }
    await ctx.userQuestions.ask({ questions: Q })
    const lines = fs.readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l))
    assert.deepEqual(
      lines.map((l) => [l.event, l.ask, l.code]),
      [
        ['refused', 1, 'INVALID_REQUEST'],
        ['refused', 2, 'INVALID_REQUEST'],
        ['refused', 3, 'INVALID_REQUEST'],
        ['refused', 4, 'INVALID_REQUEST'],
        ['refused', 5, 'INVALID_REQUEST'],
        ['refused', 6, 'INVALID_REQUEST'],
        ['refused', 7, 'INVALID_REQUEST'],
        ['asked', 8, undefined],
        ['settled', 8, undefined],
      ],
    )
    assert.equal(lines[0].message, 'request must be an object')
    assert.equal(lines[3].agentId, 'root')
    assert.match(lines[3].message, /^questions must be JSON data: /)
    assert.equal(lines[5].message, BAD_TIMEOUT)
    assert.equal(lines[6].message, 'signal must be an AbortSignal')
    ctx.dispose()
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('a journal that cannot be written: asks settle, one process warning, no crash', () => {
  // Root writes through file modes; /proc/version refuses writes to everyone.
  const source = `
    const fs = require('node:fs')
    const { Context, AutoResponder } = require(${JSON.stringify(PKG)})
    let file = '/proc/version'
    if (process.getuid && process.getuid() !== 0) {
      file = require('node:path').join(fs.mkdtempSync(require('node:path').join(require('node:os').tmpdir(), 'uq-ro-')), 'ro.jsonl')
      fs.writeFileSync(file, '')
      fs.chmodSync(file, 0o444)
    }
    const warnings = []
    process.on('warning', (w) => warnings.push(w.code + ': ' + w.message))
    ;(async () => {
      const ctx = new Context({ journal: file })
      ctx.userQuestions.registerProvider(new AutoResponder('first'))
      const Q = [{ id: 'go', question: 'Proceed?', options: [{ label: 'Yes' }] }]
      for (let i = 0; i < 3; i++) console.log(JSON.stringify(await ctx.userQuestions.ask({ questions: Q })))
      await new Promise((r) => setImmediate(r))
      console.log(warnings.length)
      console.log(warnings[0])
      console.log(file)
    })()
  `
  const run = spawnSync(process.execPath, ['-e', source], { encoding: 'utf8', timeout: 20000 })
  assert.equal(run.status, 0, run.stderr)
  const lines = run.stdout.trim().split('\n')
  assert.deepEqual(lines.slice(0, 3), Array(3).fill('{"answers":[{"id":"go","selected":["Yes"]}]}'))
  assert.equal(lines[3], '1')
  // The core's own words, once: which file, and why (no prefix repeating them).
  assert.ok(
    lines[4].startsWith(`USER_QUESTIONS_JOURNAL: the user-questions journal ${lines[5]} cannot be written: `),
    lines[4],
  )
})

test('a journal whose writes fail (/dev/full): one process warning per context, from whichever way its first ask went', async () => {
  const warnings = []
  const onWarning = (w) => warnings.push(`${w.code}: ${w.message}`)
  process.on('warning', onWarning)
  const answerLater = async (request) => {
    await new Promise((resolve) => setImmediate(resolve))
    return { answers: request.questions.map(({ id }) => ({ id, selected: [] })) }
  }
  const ways = {
    'an ask that waits for its JS provider': (ctx) => ctx.userQuestions.ask({ questions: Q }),
    'an ask settled at once (a native provider)': (ctx, auto) => auto.userQuestions.ask({ questions: Q }),
    'a plan review': (ctx) => ctx.userQuestions.reviewPlan('plan'),
    'a tool call': (ctx) => new AskUserQuestionTool(ctx).execute({ questions: Q }),
    'an ask refused before the core could read it': (ctx) =>
      ctx.userQuestions.ask({ questions: Q, signal: 'soon' }).catch((err) => err.code),
  }
  try {
    for (const [way, run] of Object.entries(ways)) {
      const ctx = new Context({ journal: '/dev/full' })
      ctx.userQuestions.registerProvider({ ask: answerLater })
      const auto = new Context({ journal: '/dev/full' })
      auto.userQuestions.registerProvider(new AutoResponder('first'))
      warnings.length = 0
      for (let i = 0; i < 3; i++) {
        await run(ctx, auto)
        // Warnings are emitted on the next tick: all of them are out after a turn of the loop.
        await new Promise((resolve) => setImmediate(resolve))
        assert.deepEqual(
          warnings,
          ['USER_QUESTIONS_JOURNAL: the user-questions journal /dev/full cannot be written: No space left on device (os error 28)'],
          `${way}, after ask ${i + 1}`,
        )
      }
      ctx.dispose()
      auto.dispose()
    }
  } finally {
    process.off('warning', onWarning)
  }
})

/** Runs `source` in a fresh Node process; it must exit on its own. */
function runToExit(source) {
  const run = spawnSync(process.execPath, ['-e', source], { encoding: 'utf8', timeout: 20000 })
  assert.equal(run.error, undefined, `the script did not exit on its own: ${run.error}`)
  assert.equal(run.signal, null, 'the script hung')
  assert.equal(run.status, 0, run.stderr)
  return run.stdout
}

test('a pending ask with a deadline keeps Node alive until it times out; then nothing does', () => {
  const out = runToExit(`
    const { Context, QuestionInbox } = require(${JSON.stringify(PKG)})
    const ctx = new Context()
    const inbox = new QuestionInbox()
    ctx.userQuestions.registerProvider(inbox)
    inbox.subscribe(() => {})
    ctx.userQuestions
      .ask({ questions: [{ id: 'go', question: 'q' }], timeoutMs: 300 })
      .catch((e) => console.log(e.code))
    process.on('exit', () => console.log('exit'))
  `)
  assert.equal(out, 'ASK_TIMED_OUT\nexit\n')
})

test('registered providers, a journal and settled deadline asks let Node exit', () => {
  const out = runToExit(`
    const { Context, QuestionInbox } = require(${JSON.stringify(PKG)})
    const path = require('node:path')
    const fs = require('node:fs')
    const dir = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'uq-exit-'))
    const ctx = new Context({ journal: path.join(dir, 'j.jsonl') })
    const inbox = new QuestionInbox()
    ctx.userQuestions.registerProvider(inbox)
    inbox.subscribe(() => {})
    const idle = new Context()
    idle.userQuestions.registerProvider({ ask: () => new Promise(() => {}) })
    const asked = ctx.userQuestions.ask({ questions: [{ id: 'go', question: 'q' }], timeoutMs: 600000 })
    inbox.answer(1, { answers: [{ id: 'go', selected: [] }] })
    asked.then(() => { fs.rmSync(dir, { recursive: true }); console.log('answered') })
  `)
  assert.equal(out, 'answered\n')
})
