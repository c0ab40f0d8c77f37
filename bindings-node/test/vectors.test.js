// The conformance vectors of §14 (tests/vectors/README.md): every file under
// tests/vectors, plus those of the directory named by UQ_VECTORS_DIR when it is set.
'use strict'

const { describe, test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
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
  const calls = { count: 0 }
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

async function settle(promise) {
  try {
    return { ok: true, value: await promise }
  } catch (error) {
    return { ok: false, error }
  }
}

async function runAsk(c) {
  const ctx = new Context({ strict: Boolean(c.strict) })
  try {
    const caller = setUpAgents(ctx, c)
    const controller = new AbortController()
    if (c.abort === 'before') controller.abort()
    let calls = { count: 0 }
    if (c.provider !== undefined) {
      const nativeAuto = c.provider.auto !== undefined && !c.abort && !('providerCalled' in c)
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
  } finally {
    ctx.dispose()
  }
}

async function runTool(c) {
  const ctx = new Context()
  try {
    const caller = setUpAgents(ctx, c)
    let calls = { count: 0 }
    if (c.provider !== undefined) {
      const made = makeProvider(c.provider)
      calls = made.calls
      ctx.userQuestions.registerProvider(made.provider)
    }
    const args = 'argsJson' in c ? JSON.parse(c.argsJson) : c.args
    const tool = new AskUserQuestionTool(ctx)
    const result = await tool.execute(args, caller === undefined ? {} : { agent: caller })
    assert.deepEqual(result, c.expect)
    if ('providerCalled' in c) assert.equal(calls.count > 0, c.providerCalled, 'providerCalled')
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
    const req = { ...c.request }
    if (caller !== undefined) req.agent = caller
    const asked = settle(ctx.userQuestions.ask(req))
    for (const step of c.submit) {
      const ticket = step.ticket ?? 1
      let code = 'OK'
      try {
        if ('answer' in step) inbox.answer(ticket, step.answer)
        else if ('cancel' in step) inbox.cancel(ticket)
        else if ('fail' in step) inbox.fail(ticket, step.fail)
        else throw new Error(`unknown step ${JSON.stringify(step)}`)
      } catch (err) {
        assert.ok(err instanceof UserQuestionError, String(err))
        code = err.code
      }
      assert.equal(code, step.expect, `step ${JSON.stringify(step)}`)
    }
    if (c.expect.pending) {
      assert.deepEqual(
        inbox.pending().map((p) => p.ticket),
        [1],
      )
      ctx.dispose()
      const outcome = await asked
      assert.ok(!outcome.ok)
      assert.equal(outcome.error.code, 'ASK_ABORTED')
    } else {
      assertOutcome(await asked, c.expect, c.name)
    }
  } finally {
    ctx.dispose()
  }
}

const RUNNERS = { ask: runAsk, tool: runTool, inbox: runInbox }

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
