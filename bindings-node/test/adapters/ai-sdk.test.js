// The Vercel AI SDK adapter run by the SDK's own generateText: the SDK's MockLanguageModelV4
// (`ai/test`, no network) emits an `ask_user_question` tool call, then a final text; the tool
// asks through the context's provider and the model receives §9's result.
'use strict'

const { test } = require('node:test')
const assert = require('node:assert/strict')

const { generateText, isStepCount, simulateReadableStream, streamText } = require('ai')
const { MockLanguageModelV4 } = require('ai/test')

const { Agent, AskUserQuestionTool, AutoResponder, Context, QuestionInbox } = require('../..')
const { OUTCOMES, assertWithdrawn, delegatedContext, failure, settledBy, settlingContext, skipping } = require('../fixtures/outcomes.js')
const { TOOL_NAME, askUserQuestionTool } = require('../../adapters/ai-sdk.js')

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

const USAGE = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
}

/** A mock model that calls the tool with `input` (JSON text) on its first turn, then stops. */
function mockModel(input, toolCallId = 'call_1') {
  return new MockLanguageModelV4({
    doGenerate: async (/** @type {any} */ options) => {
      const turn = options.prompt.filter((/** @type {any} */ m) => m.role === 'tool').length
      if (turn === 0) {
        return {
          content: [{ type: 'tool-call', toolCallId, toolName: TOOL_NAME, input }],
          finishReason: { unified: 'tool-calls', raw: undefined },
          usage: USAGE,
          warnings: [],
        }
      }
      return {
        content: [{ type: 'text', text: 'done' }],
        finishReason: { unified: 'stop', raw: undefined },
        usage: USAGE,
        warnings: [],
      }
    },
  })
}

/** generateText with the tool for two steps; returns the result and the model. */
async function run(tool, input) {
  const model = mockModel(input)
  const result = await generateText({
    model,
    tools: { [TOOL_NAME]: tool },
    prompt: 'Set up the project.',
    stopWhen: isStepCount(2),
  })
  return { result, model }
}

/** The tool result part the model was sent on its second call (or call number `call`). */
function sentToModel(model, call = 1) {
  const prompt = model.doGenerateCalls[call].prompt
  const [message] = prompt.filter((/** @type {any} */ m) => m.role === 'tool')
  const [part] = message.content
  assert.equal(part.type, 'tool-result')
  assert.equal(part.toolCallId, 'call_1')
  return part.output
}

test('the tool carries the description and parameters of §9', () => {
  const ctx = new Context()
  const tool = askUserQuestionTool(ctx)
  const definition = new AskUserQuestionTool(ctx).definition
  assert.equal(TOOL_NAME, definition.name)
  assert.equal(tool.description, definition.description)
  assert.deepEqual(tool.inputSchema.jsonSchema, definition.parameters)
})

test('generateText runs the tool call and the model reads the answer', async () => {
  const ctx = new Context()
  ctx.userQuestions.registerProvider(new AutoResponder('recommended'))
  const { result, model } = await run(askUserQuestionTool(ctx), JSON.stringify(ARGS))
  assert.equal(result.text, 'done')
  const expected = {
    isError: false,
    value: {
      answers: [
        { id: 'pkg', selected: ['pnpm (Recommended)'] },
        { id: 'ci', selected: ['Lint'] },
      ],
    },
    content: [
      {
        type: 'text',
        text: '{"answers":[{"id":"pkg","selected":["pnpm (Recommended)"]},{"id":"ci","selected":["Lint"]}]}',
      },
    ],
  }
  const [toolResult] = result.steps[0].toolResults
  assert.equal(toolResult.toolName, TOOL_NAME)
  assert.deepEqual(toolResult.output, expected)
  assert.deepEqual(sentToModel(model), { type: 'json', value: expected })
  const [sentTool] = model.doGenerateCalls[0].tools
  assert.equal(sentTool.name, TOOL_NAME)
  assert.deepEqual(sentTool.inputSchema, new AskUserQuestionTool(ctx).parameters)
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
  const { result } = await run(tool, JSON.stringify(ARGS))
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
  assert.deepEqual(result.steps[0].toolResults[0].output.value.answers[1], {
    id: 'ci',
    selected: [],
    custom: 'later',
  })
})

test('seam failures reach the model as the failure result', async () => {
  const ctx = new Context()
  let { model } = await run(askUserQuestionTool(ctx), JSON.stringify(ARGS))
  assert.deepEqual(sentToModel(model), {
    type: 'json',
    value: failure('NO_PROVIDER', 'no user-questions provider is registered'),
  })
  ctx.userQuestions.registerProvider(new AutoResponder('first'))
  ;({ model } = await run(askUserQuestionTool(ctx), '{"questions":[]}'))
  assert.deepEqual(sentToModel(model), {
    type: 'json',
    value: failure('EMPTY_QUESTIONS', 'ask_user_question requires at least one question'),
  })
  ;({ model } = await run(askUserQuestionTool(ctx), '{"questions":[{"id":1}]}'))
  assert.deepEqual(sentToModel(model), {
    type: 'json',
    value: failure('INVALID_REQUEST', 'questions[0].id must be a string'),
  })
  const gone = askUserQuestionTool(ctx, { agent: new Agent('gone') })
  ;({ model } = await run(gone, JSON.stringify(ARGS)))
  assert.equal(sentToModel(model).value.error.code, 'CALLER_NOT_LIVE')
})

test('arguments that are not JSON get the SDK tool-error, and the provider is not reached', async () => {
  const ctx = new Context()
  /** @type {unknown[]} */
  const asked = []
  ctx.userQuestions.registerProvider({ ask: (request) => asked.push(request) })
  const { result, model } = await run(askUserQuestionTool(ctx), 'not json')
  assert.deepEqual(
    result.steps[0].content.map((/** @type {any} */ part) => part.type),
    ['tool-call', 'tool-error'],
  )
  const output = sentToModel(model)
  assert.equal(output.type, 'error-text')
  assert.match(output.value, /^AI_InvalidToolInputError: Invalid input for tool ask_user_question/)
  assert.deepEqual(asked, [])
})

test('aborting generateText withdraws the ask', async () => {
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
  await assert.rejects(
    generateText({
      model: mockModel(JSON.stringify(ARGS)),
      tools: { [TOOL_NAME]: askUserQuestionTool(ctx) },
      prompt: 'Set up the project.',
      stopWhen: isStepCount(2),
      abortSignal: controller.signal,
    }),
  )
  while (events.length < 2) await new Promise((resolve) => setTimeout(resolve, 5))
  assert.deepEqual(
    events.map((e) => e.type),
    ['requested', 'resolved'],
  )
  assert.equal(events[1].outcome, 'aborted')
  assert.deepEqual(inbox.pending(), [])
})

test('ESM code imports the named exports of user-questions/ai-sdk', () => {
  const { execFileSync } = require('node:child_process')
  const code = `
    import { askUserQuestionTool, TOOL_NAME } from 'user-questions/ai-sdk'
    console.log(typeof askUserQuestionTool, TOOL_NAME)`
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', code], { cwd: __dirname, encoding: 'utf8' })
  assert.equal(out.trim(), 'function ask_user_question')
})

test('every outcome reaches the model as the failure result', async () => {
  // The person cancelling, a provider failing, the provider going away, a deadline, a
  // delegated caller: each is the failure result of §9, sent as a `json` output, never a throw.
  for (const [how, code, message] of OUTCOMES) {
    const { ctx, events, options } = settlingContext(how)
    const { result, model } = await run(askUserQuestionTool(ctx, options), JSON.stringify(ARGS))
    assert.deepEqual(sentToModel(model), { type: 'json', value: failure(code, message) }, how)
    assert.deepEqual(result.steps[0].toolResults[0].output, failure(code, message), how)
    assert.deepEqual(
      events.map((e) => e.type),
      ['requested', 'resolved'],
      how,
    )
  }

  const { ctx, child } = delegatedContext()
  const { model } = await run(askUserQuestionTool(ctx, { agent: child }), JSON.stringify(ARGS))
  assert.equal(sentToModel(model).value.error.code, 'DELEGATED_CALLER')
})

test('without keyFromCallId the ask has no key', async () => {
  const ctx = new Context()
  const { requests, provider } = skipping()
  ctx.userQuestions.registerProvider(provider)
  await run(askUserQuestionTool(ctx), JSON.stringify(ARGS))
  assert.equal(requests.length, 1)
  assert.equal('key' in requests[0], false)
})

test('an empty input is the empty object to the SDK: the seam refuses it', async () => {
  const ctx = new Context()
  ctx.userQuestions.registerProvider(new AutoResponder('first'))
  const { model } = await run(askUserQuestionTool(ctx), '')
  assert.deepEqual(sentToModel(model), { type: 'json', value: failure('INVALID_REQUEST', 'questions must be an array') })
})

test('aborting streamText withdraws the ask', async () => {
  const ctx = new Context()
  const inbox = new QuestionInbox()
  ctx.userQuestions.registerProvider(inbox)
  const controller = new AbortController()
  const events = settledBy(inbox, () => controller.abort())
  const model = new MockLanguageModelV4({
    doStream: async () => ({
      stream: simulateReadableStream({
        chunks: [
          { type: 'stream-start', warnings: [] },
          { type: 'tool-call', toolCallId: 'call_1', toolName: TOOL_NAME, input: JSON.stringify(ARGS) },
          { type: 'finish', finishReason: { unified: 'tool-calls', raw: undefined }, usage: USAGE },
        ],
      }),
    }),
  })
  /** @type {unknown[]} */
  const errors = []
  const result = streamText({
    model,
    tools: { [TOOL_NAME]: askUserQuestionTool(ctx) },
    prompt: 'Set up the project.',
    stopWhen: isStepCount(2),
    abortSignal: controller.signal,
    onError: ({ error }) => errors.push(error),
  })
  /** @type {string[]} */
  const parts = []
  // The stream ends with the SDK's abort part, not a rejection; no tool result is streamed.
  for await (const part of result.fullStream) parts.push(part.type)
  await assertWithdrawn(inbox, events)
  assert.deepEqual(parts, ['start', 'start-step', 'tool-call', 'abort'])
  assert.deepEqual(errors, [])
})

test('the tool takes a context or its userQuestions, and nothing else', async () => {
  // As in Python: `ctx.userQuestions` was refused ('AskUserQuestionTool needs a Context').
  const ctx = new Context()
  ctx.userQuestions.registerProvider(new AutoResponder('first'))
  for (const target of [ctx, ctx.userQuestions]) {
    const { model } = await run(askUserQuestionTool(target), JSON.stringify(ARGS))
    assert.equal(sentToModel(model).value.isError, false)
  }
  for (const wrong of [{}, null, ctx.agents]) {
    assert.throws(() => askUserQuestionTool(/** @type {any} */ (wrong)), {
      code: 'INVALID_ARGUMENT',
      message: 'askUserQuestionTool needs a Context or its userQuestions',
    })
  }
})

test('a call that needs approval asks only once approved', async () => {
  // The SDK's approval flow (`needsApproval`): generateText stops with an approval request and
  // nobody is asked; approved, the next call asks with the call id as key and the model reads
  // the answer; denied, nobody is asked and the model reads the SDK's `execution-denied`.
  for (const approved of [true, false]) {
    const ctx = new Context()
    const { requests, provider } = skipping()
    ctx.userQuestions.registerProvider(provider)
    const tools = { [TOOL_NAME]: { ...askUserQuestionTool(ctx, { keyFromCallId: true }), needsApproval: true } }
    const model = mockModel(JSON.stringify(ARGS))
    const first = await generateText({ model, tools, prompt: 'Set up the project.', stopWhen: isStepCount(2) })
    const request = first.content.find((/** @type {any} */ part) => part.type === 'tool-approval-request')
    assert.ok(request)
    assert.deepEqual(requests, [])
    const response = { type: 'tool-approval-response', approvalId: request.approvalId, approved, reason: 'not now' }
    const messages = [
      { role: 'user', content: 'Set up the project.' },
      ...first.response.messages,
      { role: 'tool', content: [response] },
    ]
    const second = await generateText({ model, tools, messages: /** @type {any} */ (messages), stopWhen: isStepCount(2) })
    assert.equal(second.text, 'done')
    const output = sentToModel(model, model.doGenerateCalls.length - 1)
    if (approved) {
      assert.equal(requests.length, 1)
      assert.equal(requests[0].key, 'call_1')
      assert.equal(output.type, 'json')
      assert.deepEqual(output.value.value.answers[0], { id: 'pkg', selected: [] })
    } else {
      assert.deepEqual(requests, [])
      assert.deepEqual(output, { type: 'execution-denied', reason: 'not now' })
    }
  }
})
