// The OpenAI Agents SDK adapter run by the SDK's own Runner: a fake model (the SDK's `Model`
// interface, no network) emits an `ask_user_question` call, then a final message; the tool asks
// through the context's provider and the model receives §9's result.
'use strict'

const { test } = require('node:test')
const assert = require('node:assert/strict')

const { Agent: SdkAgent, Runner, Usage } = require('@openai/agents')

const { Agent, AskUserQuestionTool, AutoResponder, Context, QuestionInbox } = require('../..')
const { OUTCOMES, assertWithdrawn, delegatedContext, failure, settledBy, settlingContext, skipping } = require('../fixtures/outcomes.js')
const { askUserQuestionTool } = require('../../adapters/openai-agents.js')

const ARGS = {
  questions: [
    {
      id: 'pkg',
      header: 'Packages',
      question: 'Which package manager should we use?',
      options: [{ label: 'pnpm (Recommended)' }, { label: 'npm' }],
    },
    {
      id: 'ci',
      question: 'Which checks should run in CI?',
      options: [{ label: 'Lint' }, { label: 'Tests' }],
      multi_select: true,
    },
  ],
}

/**
 * Answers the first turn with one function call and the next with a message (streamed as one
 * `response_done` event when the run streams).
 */
class FakeModel {
  /** @param {string} args */
  constructor(args, callId = 'call_1') {
    this.args = args
    this.callId = callId
    /** @type {any[]} */
    this.requests = []
  }

  /** @param {any} request */
  async getResponse(request) {
    this.requests.push(request)
    if (this.requests.length === 1) {
      return {
        usage: new Usage(),
        output: [
          {
            type: 'function_call',
            id: 'fc_1',
            callId: this.callId,
            name: 'ask_user_question',
            arguments: this.args,
            status: 'completed',
          },
        ],
      }
    }
    return {
      usage: new Usage(),
      output: [
        {
          type: 'message',
          id: 'msg_1',
          role: 'assistant',
          status: 'completed',
          content: [{ type: 'output_text', text: 'done' }],
        },
      ],
    }
  }

  /** The same turn as one `response_done` event. @param {any} request */
  async *getStreamedResponse(request) {
    const { usage, output } = await this.getResponse(request)
    yield { type: 'response_done', response: { id: 'resp_1', usage, output } }
  }
}

/** The function call result the model was sent on its second turn, parsed. */
function toolOutput(/** @type {FakeModel} */ model) {
  const items = model.requests[1].input
  const results = items.filter((/** @type {any} */ i) => i.type === 'function_call_result')
  assert.equal(results.length, 1)
  assert.equal(results[0].callId, model.callId)
  const output = results[0].output
  return JSON.parse(typeof output === 'string' ? output : output.text)
}

const runner = new Runner({ tracingDisabled: true })

async function run(tool, args) {
  const model = new FakeModel(args)
  const agent = new SdkAgent({ name: 'assistant', instructions: 'Ask first.', model, tools: [tool] })
  const result = await runner.run(agent, 'Set up the project.')
  assert.equal(result.finalOutput, 'done')
  return model
}

test('the function tool has the definition of §9', () => {
  const ctx = new Context()
  const tool = askUserQuestionTool(ctx)
  const definition = new AskUserQuestionTool(ctx).definition
  assert.equal(tool.type, 'function')
  assert.equal(tool.name, 'ask_user_question')
  assert.equal(tool.description, definition.description)
  assert.deepEqual(tool.parameters, definition.parameters)
  assert.equal(tool.strict, false)
})

test('the runner calls the tool and the model reads the answer', async () => {
  const ctx = new Context()
  ctx.userQuestions.registerProvider(new AutoResponder('recommended'))
  const model = await run(askUserQuestionTool(ctx), JSON.stringify(ARGS))
  assert.deepEqual(
    model.requests[0].tools.map((/** @type {any} */ t) => t.name),
    ['ask_user_question'],
  )
  const answer = {
    answers: [
      { id: 'pkg', selected: ['pnpm (Recommended)'] },
      { id: 'ci', selected: ['Lint'] },
    ],
  }
  assert.deepEqual(toolOutput(model), {
    isError: false,
    value: answer,
    content: [
      {
        type: 'text',
        text: '{"answers":[{"id":"pkg","selected":["pnpm (Recommended)"]},{"id":"ci","selected":["Lint"]}]}',
      },
    ],
  })
})

test('the provider gets the mapped questions, the agent, a deadline and the call id as key', async () => {
  const ctx = new Context()
  /** @type {any[]} */
  const requests = []
  ctx.userQuestions.registerProvider({
    async ask(request) {
      requests.push(request)
      return { answers: request.questions.map((q) => ({ id: q.id, selected: [], custom: 'later' })) }
    },
  })
  const root = new Agent('root')
  ctx.agents.enter(root)
  const tool = askUserQuestionTool(ctx, { agent: root, timeoutMs: 30000, keyFromCallId: true })
  const model = await run(tool, JSON.stringify(ARGS))
  assert.equal(requests.length, 1)
  assert.deepEqual(requests[0].questions[1], {
    id: 'ci',
    question: 'Which checks should run in CI?',
    options: [{ label: 'Lint' }, { label: 'Tests' }],
    multiSelect: true,
  })
  assert.equal(requests[0].agent, root)
  assert.equal(requests[0].key, 'call_1')
  assert.equal(typeof requests[0].expiresAt, 'string')
  assert.deepEqual(toolOutput(model).value.answers[0], { id: 'pkg', selected: [], custom: 'later' })
})

test('seam failures reach the model as the failure result', async () => {
  const ctx = new Context()
  let model = await run(askUserQuestionTool(ctx), JSON.stringify(ARGS))
  assert.deepEqual(toolOutput(model), failure('NO_PROVIDER', 'no user-questions provider is registered'))

  ctx.userQuestions.registerProvider(new AutoResponder('first'))
  model = await run(askUserQuestionTool(ctx), '{"questions": []}')
  assert.deepEqual(toolOutput(model), failure('EMPTY_QUESTIONS', 'ask_user_question requires at least one question'))
  model = await run(askUserQuestionTool(ctx), '{"questions": [{"id": 1}]}')
  assert.deepEqual(toolOutput(model), failure('INVALID_REQUEST', 'questions[0].id must be a string'))
})

test('arguments that are not JSON get the SDK parse-error message, not a result of §9', async () => {
  const ctx = new Context()
  /** @type {unknown[]} */
  const asked = []
  ctx.userQuestions.registerProvider({ ask: (request) => asked.push(request) })
  const model = await run(askUserQuestionTool(ctx), 'not json')
  const [result] = model.requests[1].input.filter((/** @type {any} */ i) => i.type === 'function_call_result')
  const output = typeof result.output === 'string' ? result.output : result.output.text
  assert.match(output, /^An error occurred while parsing tool arguments/)
  assert.deepEqual(asked, [])
})

test('an agent that is not live is refused', async () => {
  const ctx = new Context()
  ctx.userQuestions.registerProvider(new AutoResponder('first'))
  const model = await run(askUserQuestionTool(ctx, { agent: new Agent('gone') }), JSON.stringify(ARGS))
  assert.equal(toolOutput(model).error.code, 'CALLER_NOT_LIVE')
})

test('an aborted run withdraws the ask', async () => {
  const ctx = new Context()
  const inbox = new QuestionInbox()
  ctx.userQuestions.registerProvider(inbox)
  /** @type {any[]} */
  const events = []
  const controller = new AbortController()
  inbox.subscribe((event) => {
    events.push(event)
    if (event.type === 'requested') controller.abort()
  })
  const model = new FakeModel(JSON.stringify(ARGS))
  const agent = new SdkAgent({ name: 'assistant', model, tools: [askUserQuestionTool(ctx)] })
  await assert.rejects(runner.run(agent, 'Set up the project.', { signal: controller.signal }))
  while (events.length < 2) await new Promise((resolve) => setTimeout(resolve, 5))
  assert.deepEqual(
    events.map((e) => e.type),
    ['requested', 'resolved'],
  )
  assert.equal(events[1].outcome, 'aborted')
  assert.deepEqual(inbox.pending(), [])
})

test('ESM code imports the named exports of user-questions/openai-agents', () => {
  const { execFileSync } = require('node:child_process')
  const code = `
    import { askUserQuestionTool, resultText } from 'user-questions/openai-agents'
    console.log(typeof askUserQuestionTool, typeof resultText)`
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', code], { cwd: __dirname, encoding: 'utf8' })
  assert.equal(out.trim(), 'function function')
})

test('every outcome reaches the model as the failure result', async () => {
  // The person cancelling, a provider failing, the provider going away, a deadline, a
  // delegated caller: each is the failure result of §9 the model reads, never a throw.
  for (const [how, code, message] of OUTCOMES) {
    const { ctx, events, options } = settlingContext(how)
    const model = await run(askUserQuestionTool(ctx, options), JSON.stringify(ARGS))
    assert.deepEqual(toolOutput(model), failure(code, message), how)
    assert.deepEqual(
      events.map((e) => e.type),
      ['requested', 'resolved'],
      how,
    )
  }

  const { ctx, child } = delegatedContext()
  const model = await run(askUserQuestionTool(ctx, { agent: child }), JSON.stringify(ARGS))
  assert.equal(toolOutput(model).error.code, 'DELEGATED_CALLER')
})

test('without keyFromCallId the ask has no key', async () => {
  const ctx = new Context()
  const { requests, provider } = skipping()
  ctx.userQuestions.registerProvider(provider)
  await run(askUserQuestionTool(ctx), JSON.stringify(ARGS))
  assert.equal(requests.length, 1)
  assert.equal('key' in requests[0], false)
})

test("the SDK's tool timeout withdraws the ask", async () => {
  // The SDK's own per-call timeout (the tool's `timeoutMs` field) aborts the call's signal:
  // the ask is withdrawn (the inbox reports `aborted`) and the model reads the SDK's message.
  const ctx = new Context()
  const inbox = new QuestionInbox()
  ctx.userQuestions.registerProvider(inbox)
  const events = settledBy(inbox, () => {})
  const model = await run({ ...askUserQuestionTool(ctx), timeoutMs: 50 }, JSON.stringify(ARGS))
  const [result] = model.requests[1].input.filter((/** @type {any} */ i) => i.type === 'function_call_result')
  const output = typeof result.output === 'string' ? result.output : result.output.text
  assert.equal(output, "Tool 'ask_user_question' timed out after 50ms.")
  await assertWithdrawn(inbox, events)
})

test("the journal records the run's asks", async () => {
  // Every call the runner makes is journaled (§18) with the agent, the call id as key and the
  // deadline; a refused call as `refused`.
  const fs = require('node:fs')
  const os = require('node:os')
  const path = require('node:path')
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'uq-openai-agents-'))
  try {
    const journal = path.join(dir, 'asks.jsonl')
    const ctx = new Context({ journal })
    const inbox = new QuestionInbox()
    ctx.userQuestions.registerProvider(inbox)
    const root = new Agent('root')
    ctx.agents.enter(root)
    const answer = {
      answers: [
        { id: 'pkg', selected: ['npm'] },
        { id: 'ci', selected: [] },
      ],
    }
    const events = settledBy(inbox, (ticket) => inbox.answer(ticket, answer))
    const tool = askUserQuestionTool(ctx, { agent: root, timeoutMs: 600000, keyFromCallId: true })
    await run(tool, JSON.stringify(ARGS))
    await run(tool, '{"questions": [{"id": 1}]}')
    ctx.dispose()
    const lines = fs
      .readFileSync(journal, 'utf8')
      .trim()
      .split('\n')
      .map((line) => {
        const { at, ms, ...rest } = JSON.parse(line)
        return rest
      })
    assert.deepEqual(lines, [
      {
        event: 'asked',
        ask: 1,
        agentId: 'root',
        key: 'call_1',
        questions: events[0].questions, // as the provider got them
        timeoutMs: 600000,
      },
      { event: 'settled', ask: 1, outcome: 'answered', answer },
      { event: 'refused', ask: 2, agentId: 'root', code: 'INVALID_REQUEST', message: 'questions[0].id must be a string' },
    ])
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('a call that needs approval asks only once approved', async () => {
  // The SDK's approval flow (`needsApproval`): the run stops with the call as an interruption
  // and nobody is asked; approved, the resumed run asks with the call id as key; rejected,
  // nobody is asked and the model reads the SDK's rejection.
  for (const approve of [true, false]) {
    const ctx = new Context()
    const { requests, provider } = skipping()
    ctx.userQuestions.registerProvider(provider)
    const tool = { ...askUserQuestionTool(ctx, { keyFromCallId: true }), needsApproval: async () => true }
    const model = new FakeModel(JSON.stringify(ARGS))
    const agent = new SdkAgent({ name: 'assistant', model, tools: [tool] })
    let result = await runner.run(agent, 'Set up the project.')
    assert.equal(result.interruptions.length, 1)
    assert.deepEqual(requests, [])
    if (approve) result.state.approve(result.interruptions[0])
    else result.state.reject(result.interruptions[0])
    result = await runner.run(agent, result.state)
    assert.equal(result.finalOutput, 'done')
    if (approve) {
      assert.equal(requests.length, 1)
      assert.equal(requests[0].key, 'call_1')
      assert.deepEqual(toolOutput(model).value.answers[0], { id: 'pkg', selected: [] })
    } else {
      assert.deepEqual(requests, [])
      const [output] = model.requests[1].input.filter((/** @type {any} */ i) => i.type === 'function_call_result')
      assert.equal(typeof output.output === 'string' ? output.output : output.output.text, 'Tool execution was not approved.')
    }
  }
})

test('an aborted streamed run withdraws the ask', async () => {
  const ctx = new Context()
  const inbox = new QuestionInbox()
  ctx.userQuestions.registerProvider(inbox)
  const controller = new AbortController()
  const events = settledBy(inbox, () => controller.abort())
  const model = new FakeModel(JSON.stringify(ARGS))
  const agent = new SdkAgent({ name: 'assistant', model, tools: [askUserQuestionTool(ctx)] })
  const result = await runner.run(agent, 'Set up the project.', { stream: true, signal: controller.signal })
  /** @type {string[]} */
  const kinds = []
  for await (const event of result) kinds.push(event.type)
  assert.ok(kinds.includes('run_item_stream_event'))
  assert.equal(result.cancelled, true)
  await assertWithdrawn(inbox, events)
  assert.equal(model.requests.length, 1)
})

test('the tool takes a context or its userQuestions, and nothing else', async () => {
  // As in Python: `ctx.userQuestions` was refused ('AskUserQuestionTool needs a Context').
  const ctx = new Context()
  ctx.userQuestions.registerProvider(new AutoResponder('first'))
  for (const target of [ctx, ctx.userQuestions]) {
    const model = await run(askUserQuestionTool(target), JSON.stringify(ARGS))
    assert.equal(toolOutput(model).isError, false)
  }
  for (const wrong of [{}, null, ctx.agents]) {
    assert.throws(() => askUserQuestionTool(/** @type {any} */ (wrong)), {
      code: 'INVALID_ARGUMENT',
      message: 'askUserQuestionTool needs a Context or its userQuestions',
    })
  }
})
