// Agents (§5): identity is the instance; the registry decides who may ask.
'use strict'

const { test } = require('node:test')
const assert = require('node:assert/strict')

const { Agent, Context, UserQuestionError } = require('..')

const QUESTIONS = [{ id: 'go', question: 'Proceed?', options: [{ label: 'Yes' }] }]
const YES = { answers: [{ id: 'go', selected: ['Yes'] }] }

test('an Agent has an id and a delegation depth (default 0)', () => {
  const a = new Agent('root')
  assert.equal(a.id, 'root')
  assert.equal(a.delegationDepth, 0)
  assert.equal(new Agent('s', { delegationDepth: 3 }).delegationDepth, 3)
  assert.equal(JSON.stringify(a), '{"id":"root","delegationDepth":0}')
  assert.equal(require('node:util').inspect(a), 'Agent {"id":"root","delegationDepth":0}')
  assert.throws(() => new Agent(1), { name: 'UserQuestionError', code: 'INVALID_ARGUMENT' })
  assert.throws(() => new Agent('x', { delegationDepth: -1 }), { code: 'INVALID_ARGUMENT' })
  assert.throws(() => new Agent('x', { delegationDepth: 1.5 }), { code: 'INVALID_ARGUMENT' })
})

test('enter, get, roots and list answer with the very objects entered, in entry order', () => {
  const ctx = new Context()
  const root = new Agent('root')
  const child = new Agent('child', { delegationDepth: 1 })
  const other = new Agent('other')
  ctx.agents.enter(root)
  ctx.agents.enter(child, root)
  ctx.agents.enter(other, null)
  assert.equal(ctx.agents.get('root'), root)
  assert.equal(ctx.agents.get('child'), child)
  assert.equal(ctx.agents.get('nobody'), undefined)
  assert.deepEqual(ctx.agents.roots(), [root, other])
  assert.ok(ctx.agents.roots()[0] === root)
  assert.deepEqual(ctx.agents.list(), [root, child, other])
})

test('entering a live id fails AGENT_EXISTS with the exact message', () => {
  const ctx = new Context()
  ctx.agents.enter(new Agent('a'))
  assert.throws(() => ctx.agents.enter(new Agent('a')), (err) => {
    assert.ok(err instanceof UserQuestionError)
    assert.equal(err.code, 'AGENT_EXISTS')
    assert.equal(err.message, 'agent "a" is already registered')
    return true
  })
  assert.throws(() => ctx.agents.enter({ id: 'b' }), { code: 'INVALID_ARGUMENT' })
  assert.throws(() => ctx.agents.enter(new Agent('b'), { id: 'a' }), { code: 'INVALID_ARGUMENT' })
})

test('detach is idempotent and a stale detach never removes a later agent', () => {
  const ctx = new Context()
  const first = new Agent('a')
  const detachFirst = ctx.agents.enter(first)
  detachFirst()
  detachFirst()
  assert.equal(ctx.agents.get('a'), undefined)
  const second = new Agent('a')
  const detachSecond = ctx.agents.enter(second)
  detachFirst()
  assert.equal(ctx.agents.get('a'), second)
  detachSecond[Symbol.dispose]()
  assert.deepEqual(ctx.agents.list(), [])
})

test('a stale detach never removes the same instance entered again (§5: scoped to its registration)', async () => {
  const ctx = new Context()
  ctx.userQuestions.registerProvider({ ask: () => YES })
  const a = new Agent('a')
  const detach1 = ctx.agents.enter(a)
  detach1()
  const detach2 = ctx.agents.enter(a)
  detach1()
  detach1[Symbol.dispose]()
  assert.equal(ctx.agents.get('a'), a)
  assert.deepEqual(ctx.agents.roots(), [a])
  assert.deepEqual(await ctx.userQuestions.ask({ questions: QUESTIONS, agent: a }), YES)
  detach2()
  assert.equal(ctx.agents.get('a'), undefined)
  await assert.rejects(ctx.userQuestions.ask({ questions: QUESTIONS, agent: a }), {
    code: 'CALLER_NOT_LIVE',
  })
  // Re-entered as a child: the old handles still leave it alone, its own detaches it.
  const root = new Agent('root')
  ctx.agents.enter(root)
  const detach3 = ctx.agents.enter(a, root)
  detach1()
  detach2()
  assert.deepEqual(ctx.agents.list(), [root, a])
  detach3()
  assert.deepEqual(ctx.agents.list(), [root])
})

test('the live root may ask, and its provider receives the very Agent object', async () => {
  const ctx = new Context()
  const root = new Agent('root')
  ctx.agents.enter(root)
  let seen
  ctx.userQuestions.registerProvider({
    ask(request) {
      seen = request.agent
      return YES
    },
  })
  assert.deepEqual(await ctx.userQuestions.ask({ questions: QUESTIONS, agent: root }), YES)
  assert.equal(seen, root)
})

test('the provider gets the asker object even when the agent detaches right after asking', async () => {
  const ctx = new Context()
  let seen
  ctx.userQuestions.registerProvider({
    ask(request) {
      seen = request.agent
      return YES
    },
  })
  const root = new Agent('root')
  const detach = ctx.agents.enter(root)
  const asked = ctx.userQuestions.ask({ questions: QUESTIONS, agent: root })
  detach()
  assert.deepEqual(await asked, YES)
  assert.equal(seen, root)
})

test('a live child is DELEGATED_CALLER, and stays a child when its owner detaches', async () => {
  const ctx = new Context()
  ctx.userQuestions.registerProvider({ ask: () => YES })
  const root = new Agent('root')
  const child = new Agent('child', { delegationDepth: 0 })
  const detachRoot = ctx.agents.enter(root)
  ctx.agents.enter(child, root)
  await assert.rejects(ctx.userQuestions.ask({ questions: QUESTIONS, agent: child }), {
    code: 'DELEGATED_CALLER',
    message:
      "human interaction is unavailable while the calling agent is owned by another live agent; include the unresolved question or decision in the child agent's final result",
  })
  detachRoot()
  await assert.rejects(ctx.userQuestions.ask({ questions: QUESTIONS, agent: child }), {
    code: 'DELEGATED_CALLER',
  })
})

test('a stale instance, a detached agent and a look-alike object are CALLER_NOT_LIVE', async () => {
  const ctx = new Context()
  ctx.userQuestions.registerProvider({ ask: () => YES })
  const root = new Agent('root')
  const detach = ctx.agents.enter(root)
  const message = 'human interaction requires the exact live calling agent when an agent is supplied'
  await assert.rejects(ctx.userQuestions.ask({ questions: QUESTIONS, agent: new Agent('root') }), {
    code: 'CALLER_NOT_LIVE',
    message,
  })
  await assert.rejects(ctx.userQuestions.ask({ questions: QUESTIONS, agent: { id: 'root' } }), {
    code: 'CALLER_NOT_LIVE',
  })
  const elsewhere = new Context()
  elsewhere.userQuestions.registerProvider({ ask: () => YES })
  await assert.rejects(elsewhere.userQuestions.ask({ questions: QUESTIONS, agent: root }), {
    code: 'CALLER_NOT_LIVE',
  })
  detach()
  await assert.rejects(ctx.userQuestions.ask({ questions: QUESTIONS, agent: root }), {
    code: 'CALLER_NOT_LIVE',
  })
})

test("an agent's every ask is checked anew: answered, detached, entered again, as a child, in two contexts", async () => {
  const one = new Context()
  const two = new Context()
  const seen = []
  for (const ctx of [one, two]) ctx.userQuestions.registerProvider({ ask: (request) => (seen.push(request.agent), YES) })
  const agent = new Agent('agent')
  const ask = (ctx) => ctx.userQuestions.ask({ questions: QUESTIONS, agent })
  const detach = one.agents.enter(agent)
  assert.deepEqual(await ask(one), YES)
  assert.deepEqual(await ask(one), YES)
  await assert.rejects(ask(two), { code: 'CALLER_NOT_LIVE' })
  detach()
  await assert.rejects(ask(one), { code: 'CALLER_NOT_LIVE' })
  const root = new Agent('root')
  two.agents.enter(root)
  const detachChild = two.agents.enter(agent, root)
  await assert.rejects(ask(two), { code: 'DELEGATED_CALLER' })
  detachChild()
  one.agents.enter(agent)
  two.agents.enter(agent)
  assert.deepEqual(await ask(one), YES)
  assert.deepEqual(await ask(two), YES)
  assert.equal(seen.length, 4)
  for (const a of seen) assert.equal(a, agent)
})

test('a resumed session is a new root and may ask whatever its delegationDepth', async () => {
  const ctx = new Context()
  ctx.userQuestions.registerProvider({ ask: () => YES })
  const resumed = new Agent('session', { delegationDepth: 7 })
  ctx.agents.enter(resumed)
  assert.deepEqual(await ctx.userQuestions.ask({ questions: QUESTIONS, agent: resumed }), YES)
})

test('an agent entered and then dropped by its creator stays reachable while live', async () => {
  const ctx = new Context()
  ;(() => {
    ctx.agents.enter(new Agent('ephemeral'))
  })()
  if (global.gc) global.gc()
  await new Promise((resolve) => setImmediate(resolve))
  const agent = ctx.agents.get('ephemeral')
  assert.ok(agent instanceof Agent)
  assert.equal(agent.id, 'ephemeral')
})

test('asks by a root stay fast with 10,000 live agents', async () => {
  const ctx = new Context()
  ctx.userQuestions.registerProvider({ ask: () => YES })
  const root = new Agent('root')
  ctx.agents.enter(root)
  for (let i = 0; i < 10000; i += 1) ctx.agents.enter(new Agent(`a${i}`), root)
  const started = performance.now()
  for (let i = 0; i < 200; i += 1) await ctx.userQuestions.ask({ questions: QUESTIONS, agent: root })
  const elapsed = performance.now() - started
  assert.ok(elapsed < 5000, `200 asks with 10,000 live agents took ${elapsed} ms`)
})
