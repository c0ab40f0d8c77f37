// The conformance vectors of §14 (tests/vectors/README.md): every file under
// tests/vectors, plus those of the directory named by UQ_VECTORS_DIR when it is set.
'use strict'

const { describe, test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

// A `{"fail": {"code": C}}` without a message fails with the spec's own message for C, if any
// (tests/vectors/README.md).
const SPEC_MESSAGES = {
  ASK_ABORTED: 'ask_user_question was aborted before the user answered',
  EMPTY_QUESTIONS: 'ask_user_question requires at least one question',
  CALLER_NOT_LIVE: 'human interaction requires the exact live calling agent when an agent is supplied',
  DELEGATED_CALLER: "human interaction is unavailable while the calling agent is owned by another live agent; include the unresolved question or decision in the child agent's final result",
  NO_PROVIDER: 'no user-questions provider is registered',
  DUPLICATE_PROVIDER: 'a user-questions provider is already registered',
  ASK_CANCELLED: 'the user cancelled ask_user_question',
}

const {
  Agent,
  AskUserQuestionTool,
  AutoResponder,
  Context,
  QuestionInbox,
  UserQuestionError,
} = require('..')

const OWN_DIR = path.resolve(__dirname, '..', '..', 'tests', 'vectors')

/** `[{dir, kind, file, cases}]` for one vectors directory (same layout everywhere). */
function load(dir) {
  const groups = []
  for (const [kind, sub] of [
    ['ask', ''],
    ['tool', 'tool'],
    ['inbox', 'inbox'],
    ['review', 'review'],
  ]) {
    const where = path.join(dir, sub)
    if (!fs.existsSync(where)) continue
    for (const name of fs.readdirSync(where).sort()) {
      if (!name.endsWith('.json')) continue
      const file = path.join(where, name)
      groups.push({ kind, file, cases: JSON.parse(fs.readFileSync(file, 'utf8')) })
    }
  }
  return groups
}

function request(c) {
  if ('requestJson' in c) {
    // The Node surface takes objects, not JSON text: text that parses is asked as the object
    // it denotes; text that does not is passed as it is (a string request, INVALID_REQUEST).
    try {
      return JSON.parse(c.requestJson)
    } catch {
      return c.requestJson
    }
  }
  return c.request
}

/** Enters the case's agents, detaches its `exit` ones, and returns the caller (if any). */
function setUpAgents(ctx, c) {
  const agents = new Map()
  const detaches = new Map()
  for (const a of c.agents ?? []) {
    const agent = new Agent(a.id, { delegationDepth: a.delegationDepth ?? 0 })
    const owner = a.owner === undefined ? undefined : agents.get(a.owner)
    detaches.set(a.id, ctx.agents.enter(agent, owner))
    agents.set(a.id, agent)
  }
  for (const id of c.exit ?? []) detaches.get(id)()
  if (c.caller === undefined) return undefined
  if (typeof c.caller === 'string') return agents.get(c.caller)
  return new Agent(c.caller.stale)
}

/**
 * The case's provider as `{provider, calls}`; `calls.count` counts calls. With `during`, the
 * provider calls `onCalled` and then settles only once its own signal fires.
 */
function makeProvider(spec, { during, onCalled } = {}) {
  const calls = { count: 0, requests: [] }
  const auto =
    spec.auto === undefined
      ? undefined
      : new AutoResponder(spec.auto, { approveIntents: spec.approveIntents ?? false })
  const behave = (request) => {
    if (spec.answer !== undefined) return spec.answer
    if (spec.fail !== undefined) {
      if (spec.fail.code !== undefined) {
        throw new UserQuestionError(
          spec.fail.message ?? SPEC_MESSAGES[spec.fail.code] ?? `provider failed with ${spec.fail.code}`,
          spec.fail.code,
        )
      }
      throw new Error(spec.fail.message)
    }
    if (spec.never) return new Promise(() => {})
    if (auto !== undefined) return auto.ask(request)
    throw new Error(`unknown provider spec ${JSON.stringify(spec)}`)
  }
  const provider = {
    ask(request) {
      calls.count += 1
      calls.requests.push(request)
      if (!during) return behave(request)
      onCalled()
      return new Promise((resolve, reject) => {
        request.signal.addEventListener('abort', () => {
          if (spec.never) return
          try {
            resolve(behave(request))
          } catch (err) {
            reject(err)
          }
        })
      })
    },
  }
  return { provider, calls }
}

function assertOutcome(actual, expect, name) {
  if ('answer' in expect) {
    assert.ok(actual.ok, `${name}: expected an answer, got ${JSON.stringify(actual.error)}`)
    assert.deepEqual(actual.value, expect.answer)
    return
  }
  assert.ok(!actual.ok, `${name}: expected ${expect.error.code}, got an answer`)
  assert.ok(actual.error instanceof UserQuestionError, `${name}: not a UserQuestionError`)
  assert.equal(actual.error.code, expect.error.code, `${name}: ${actual.error.message}`)
  if (expect.error.message !== undefined) {
    assert.equal(actual.error.message, expect.error.message)
  }
}

const RFC3339_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

/** A fresh journal file for a case that has `journal`, else undefined. */
function journalFor(c) {
  if (c.journal === undefined) return undefined
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'uq-journal-'))
  return path.join(dir, 'journal.jsonl')
}

/** The journal's lines, normalised as tests/vectors/README.md says, against the case's. */
function checkJournal(file, c) {
  if (file === undefined) return
  const text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : ''
  fs.rmSync(path.dirname(file), { recursive: true, force: true })
  const lines = text.split('\n').filter((l) => l !== '')
  const normalised = lines.map((line) => {
    const at = /^\{"at":"([^"]*)"/.exec(line)
    assert.ok(at && RFC3339_MS.test(at[1]), `journal "at" is RFC 3339 with ms: ${line}`)
    let out = line.replace(/^\{"at":"[^"]*"/, '{"at":"T"')
    const ms = /,"ms":([^,}]*)/.exec(out)
    if (ms) {
      assert.match(ms[1], /^\d+$/, `journal "ms" is a whole number: ${line}`)
      out = out.replace(/,"ms":\d+/, ',"ms":0')
    }
    return out
  })
  assert.deepEqual(normalised, c.journal, `${c.name}: journal`)
}

/** What the provider received, against the case's `providerRequest`. */
function checkProviderRequest(calls, c) {
  if (c.providerRequest === undefined) return
  assert.ok(calls.requests.length > 0, `${c.name}: the provider was not called`)
  const request = calls.requests[0]
  assert.equal(request.key, c.providerRequest.key, `${c.name}: providerRequest.key`)
  assert.deepEqual(request.to, c.providerRequest.to, `${c.name}: providerRequest.to`)
  assert.equal('expiresAt' in request, c.providerRequest.expiresAt, `${c.name}: providerRequest.expiresAt`)
  if (c.providerRequest.expiresAt) assert.match(request.expiresAt, RFC3339_MS)
}

async function settle(promise) {
  try {
    return { ok: true, value: await promise }
  } catch (error) {
    return { ok: false, error }
  }
}

async function runAsk(c) {
  const journal = journalFor(c)
  const ctx = new Context({ strict: Boolean(c.strict), journal })
  try {
    const caller = setUpAgents(ctx, c)
    const controller = new AbortController()
    if (c.abort === 'before') controller.abort()
    let calls = { count: 0, requests: [] }
    if (c.provider !== undefined) {
      const nativeAuto =
        c.provider.auto !== undefined && !c.abort && !('providerCalled' in c) && !('providerRequest' in c)
      if (nativeAuto) {
        // Served natively: no JS round trip (whether it was called is not observable).
        ctx.userQuestions.registerProvider(
          new AutoResponder(c.provider.auto, { approveIntents: c.provider.approveIntents ?? false }),
        )
      } else {
        const made = makeProvider(c.provider, {
          during: c.abort === 'during',
          onCalled: () => queueMicrotask(() => controller.abort()),
        })
        calls = made.calls
        ctx.userQuestions.registerProvider(made.provider)
      }
    }
    let req = request(c)
    if (req !== null && typeof req === 'object' && !Array.isArray(req)) {
      req = { ...req }
      if (caller !== undefined) req.agent = caller
      if (c.abort !== undefined) req.signal = controller.signal
    }
    const outcome = await settle(ctx.userQuestions.ask(req))
    assertOutcome(outcome, c.expect, c.name)
    if ('providerCalled' in c) assert.equal(calls.count > 0, c.providerCalled, 'providerCalled')
    checkProviderRequest(calls, c)
    checkJournal(journal, c)
  } finally {
    ctx.dispose()
  }
}

async function runTool(c) {
  const journal = journalFor(c)
  const ctx = new Context({ journal })
  try {
    const caller = setUpAgents(ctx, c)
    let calls = { count: 0, requests: [] }
    if (c.provider !== undefined) {
      const made = makeProvider(c.provider)
      calls = made.calls
      ctx.userQuestions.registerProvider(made.provider)
    }
    const args = 'argsJson' in c ? JSON.parse(c.argsJson) : c.args
    const tool = new AskUserQuestionTool(ctx)
    const exec = {}
    if (caller !== undefined) exec.agent = caller
    if ('timeoutMs' in c) exec.timeoutMs = c.timeoutMs
    if ('key' in c) exec.key = c.key
    const result = await tool.execute(args, exec)
    assert.deepEqual(result, c.expect)
    if ('providerCalled' in c) assert.equal(calls.count > 0, c.providerCalled, 'providerCalled')
    checkProviderRequest(calls, c)
    checkJournal(journal, c)
  } finally {
    ctx.dispose()
  }
}

async function runInbox(c) {
  const ctx = new Context()
  try {
    const caller = setUpAgents(ctx, c)
    const inbox = new QuestionInbox()
    ctx.userQuestions.registerProvider(inbox)
    const events = []
    inbox.subscribe((e) => {
      if (e.type === 'resolved' && e.by !== undefined) events.push(`resolved ${e.ticket} ${e.outcome} by ${e.by.id}`)
      else if (e.type === 'resolved') events.push(`resolved ${e.ticket} ${e.outcome}`)
      else events.push(`${e.type} ${e.ticket}`)
    })
    const req = { ...c.request }
    if (caller !== undefined) req.agent = caller
    let done = false
    const asked = settle(ctx.userQuestions.ask(req)).finally(() => {
      done = true
    })
    if (c.pendingKeys !== undefined) {
      const p = inbox.pending().find((q) => q.ticket === 1)
      assert.ok(p, 'ticket 1 is pending')
      assert.deepEqual(Object.keys(p), c.pendingKeys, 'pendingKeys')
      assert.match(p.askedAt, RFC3339_MS)
      if ('expiresAt' in p) assert.match(p.expiresAt, RFC3339_MS)
    }
    for (const step of c.submit) {
      const ticket = step.ticket ?? 1
      if ('settle' in step) {
        await asked
        continue
      }
      let code = 'OK'
      let message
      let returned
      const before = 'extend' in step ? inbox.pending().find((q) => q.ticket === ticket)?.expiresAt : undefined
      try {
        if ('answer' in step) inbox.answer(ticket, step.answer)
        else if ('cancel' in step) inbox.cancel(ticket)
        else if ('fail' in step) inbox.fail(ticket, step.fail)
        else if ('extend' in step) returned = inbox.extend(ticket, step.extend)
        else throw new Error(`unknown step ${JSON.stringify(step)}`)
      } catch (err) {
        assert.ok(err instanceof UserQuestionError, String(err))
        code = err.code
        message = err.message
      }
      assert.equal(code, step.expect, `step ${JSON.stringify(step)}`)
      if ('message' in step) assert.equal(message, step.message, `step ${JSON.stringify(step)}`)
      if (step.expiresAt === 'none') assert.equal(returned, undefined, 'extend returned none')
      if (step.expiresAt === 'later') {
        assert.match(returned, RFC3339_MS)
        assert.ok(before !== undefined && returned > before, `extend: ${returned} after ${before}`)
        assert.equal(inbox.pending().find((q) => q.ticket === ticket)?.expiresAt, returned)
      }
    }
    if (c.expect.pending) {
      assert.ok(!done, 'still pending')
      const p = inbox.pending().find((q) => q.ticket === 1)
      assert.ok(p, 'ticket 1 is pending')
      assert.deepEqual(p.questions, c.request.questions.map((q) => JSON.parse(JSON.stringify(q))))
      if (typeof c.caller === 'string') assert.equal(p.agentId, c.caller)
      ctx.dispose()
      const outcome = await asked
      assert.ok(!outcome.ok)
      assert.equal(outcome.error.code, 'ASK_ABORTED')
      assert.equal(outcome.error.message, 'the user-questions provider was disposed before the user answered')
    } else {
      assertOutcome(await asked, c.expect, c.name)
    }
    if (c.events !== undefined) assert.deepEqual(events, c.events, 'events')
  } finally {
    ctx.dispose()
  }
}

async function runReview(c) {
  const journal = journalFor(c)
  const ctx = new Context({ journal })
  try {
    const caller = setUpAgents(ctx, c)
    const controller = new AbortController()
    if (c.abort === 'before') controller.abort()
    let calls = { count: 0, requests: [] }
    if (c.provider !== undefined) {
      const made = makeProvider(c.provider, {
        during: c.abort === 'during',
        onCalled: () => queueMicrotask(() => controller.abort()),
      })
      calls = made.calls
      ctx.userQuestions.registerProvider(made.provider)
    }
    const options = {}
    if (caller !== undefined) options.agent = caller
    if (c.abort !== undefined) options.signal = controller.signal
    if ('question' in c) options.question = c.question
    if ('timeoutMs' in c) options.timeoutMs = c.timeoutMs
    const outcome = await settle(ctx.userQuestions.reviewPlan(c.plan, options))
    if ('review' in c.expect) {
      assert.ok(outcome.ok, `${c.name}: expected a review, got ${outcome.error}`)
      assert.deepEqual(outcome.value, c.expect.review)
    } else {
      assertOutcome(outcome, c.expect, c.name)
    }
    if ('providerCalled' in c) assert.equal(calls.count > 0, c.providerCalled, 'providerCalled')
    if ('providerQuestions' in c) assert.deepEqual(calls.requests[0]?.questions, c.providerQuestions)
    checkJournal(journal, c)
  } finally {
    ctx.dispose()
  }
}

const RUNNERS = { ask: runAsk, tool: runTool, inbox: runInbox, review: runReview }

const dirs = [OWN_DIR]
if (process.env.UQ_VECTORS_DIR) dirs.push(path.resolve(process.env.UQ_VECTORS_DIR))

for (const dir of dirs) {
  const groups = load(dir)
  describe(`vectors in ${dir}`, () => {
    test('has vector files', () => {
      assert.ok(groups.length > 0, `no vector files in ${dir}`)
    })
    for (const { kind, file, cases } of groups) {
      describe(path.relative(dir, file), () => {
        for (const c of cases) {
          test(c.name, () => RUNNERS[kind](c))
        }
      })
    }
  })
}
