// The model-facing tool `ask_user_question` (§9).
'use strict'

const { test } = require('node:test')
const assert = require('node:assert/strict')

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const { Agent, AskUserQuestionTool, AutoResponder, Context, UserQuestionError } = require('..')

const DESCRIPTION =
  'Ask the user a concise question when you need confirmation, a choice, or missing information before proceeding. Send one or more questions, each with a stable id that will be echoed in the answer.'

function failure(code, message) {
  return {
    isError: true,
    error: { name: 'UserQuestionError', code, message },
    content: [{ type: 'text', text: `Error: ${message}` }],
  }
}

test('the definition is exactly §9', () => {
  const tool = new AskUserQuestionTool(new Context())
  assert.equal(tool.name, 'ask_user_question')
  assert.equal(tool.description, DESCRIPTION)
  assert.deepEqual(tool.definition, {
    name: tool.name,
    description: DESCRIPTION,
    parameters: tool.parameters,
  })
  const p = tool.parameters
  assert.equal(p.type, 'object')
  assert.deepEqual(p.required, ['questions'])
  const questions = p.properties.questions
  assert.equal(questions.type, 'array')
  assert.equal(questions.description, 'Questions to ask the user before continuing.')
  const item = questions.items
  assert.equal(item.additionalProperties, true)
  assert.deepEqual(item.required, ['id', 'question'])
  assert.deepEqual(item.properties.id, {
    type: 'string',
    description: 'Stable id for this question; echoed in the answer.',
  })
  assert.deepEqual(item.properties.question, {
    type: 'string',
    description: 'The specific question to ask the user.',
  })
  assert.deepEqual(item.properties.header, {
    type: 'string',
    description: 'Optional short heading for the question, such as "Confirm" or "Choose Mode".',
  })
  assert.deepEqual(item.properties.multi_select, {
    type: 'boolean',
    description: 'Whether the user may select more than one option. Defaults to false.',
  })
  const options = item.properties.options
  assert.equal(options.type, 'array')
  assert.equal(
    options.description,
    'Optional choices to show the user. If you recommend one, put it first and append "(Recommended)" to that label.',
  )
  assert.deepEqual(options.items, {
    type: 'object',
    additionalProperties: true,
    properties: {
      label: { type: 'string', description: 'Short user-facing option label.' },
      description: { type: 'string', description: 'One sentence explaining the tradeoff or impact.' },
      preview: {
        type: 'string',
        description:
          'Optional text shown while the option is focused: markdown, or a unified diff of what choosing it would change.',
      },
    },
    required: ['label'],
  })
  // §24: a typed value instead of options.
  const input = item.properties.input
  assert.equal(input.type, 'object')
  assert.deepEqual(input.required, ['kind'])
  assert.deepEqual(input.properties.kind.enum, [
    'text',
    'number',
    'integer',
    'boolean',
    'date',
    'datetime',
    'email',
    'url',
    'secret',
    'file',
  ])
  // Each read is a fresh copy: callers cannot corrupt the definition.
  tool.parameters.required.push('x')
  assert.deepEqual(tool.parameters.required, ['questions'])
})

test('execute maps multi_select, passes the agent and returns the success result', async () => {
  const ctx = new Context()
  const root = new Agent('root')
  ctx.agents.enter(root)
  let seen
  ctx.userQuestions.registerProvider({
    ask(request) {
      seen = request
      return { answers: [{ id: 'pkg', selected: ['npm', 'pnpm'] }] }
    },
  })
  const tool = new AskUserQuestionTool(ctx)
  const result = await tool.execute(
    {
      questions: [
        {
          id: 'pkg',
          question: 'Which?',
          header: 'Tools',
          multi_select: true,
          detail: 'not copied',
          options: [{ label: 'npm' }, { label: 'pnpm', description: 'fast' }],
        },
      ],
    },
    { agent: root },
  )
  assert.deepEqual(seen.questions, [
    {
      id: 'pkg',
      question: 'Which?',
      header: 'Tools',
      options: [{ label: 'npm' }, { label: 'pnpm', description: 'fast' }],
      multiSelect: true,
    },
  ])
  assert.equal(seen.agent, root)
  assert.deepEqual(result, {
    isError: false,
    value: { answers: [{ id: 'pkg', selected: ['npm', 'pnpm'] }] },
    content: [{ type: 'text', text: '{"answers":[{"id":"pkg","selected":["npm","pnpm"]}]}' }],
  })
})

test('execute never throws: failures are tool results', async () => {
  const ctx = new Context()
  const tool = new AskUserQuestionTool(ctx)
  assert.deepEqual(
    await tool.execute({ questions: [{ id: 'a', question: 'q' }] }),
    failure('NO_PROVIDER', 'no user-questions provider is registered'),
  )
  assert.deepEqual(await tool.execute(undefined), failure('INVALID_REQUEST', 'arguments must be an object'))
  assert.deepEqual(
    await tool.execute({ questions: [{ id: 'a', question: 'q', multi_select: 'yes' }] }),
    failure('INVALID_REQUEST', 'questions[0].multi_select must be a boolean'),
  )
  const cyclic = { questions: [] }
  cyclic.self = cyclic
  const result = await tool.execute(cyclic)
  assert.equal(result.isError, true)
  assert.equal(result.error.code, 'INVALID_REQUEST')
  assert.match(result.error.message, /^arguments are not JSON data: /)
  assert.deepEqual(
    await tool.execute({ questions: [{ id: 'a', question: 'q' }] }, { signal: 'soon' }),
    failure('INVALID_REQUEST', 'signal must be an AbortSignal'),
  )
  assert.deepEqual(
    await tool.execute({ questions: [{ id: 'a', question: 'q' }] }, { agent: new Agent('ghost') }),
    failure(
      'CALLER_NOT_LIVE',
      'human interaction requires the exact live calling agent when an agent is supplied',
    ),
  )
})

test('execute honours the signal, before and while waiting', async () => {
  const ctx = new Context()
  let called = 0
  ctx.userQuestions.registerProvider({
    ask() {
      called += 1
      return new Promise(() => {})
    },
  })
  const tool = new AskUserQuestionTool(ctx)
  const args = { questions: [{ id: 'a', question: 'q' }] }
  const aborted = failure('ASK_ABORTED', 'ask_user_question was aborted before the user answered')
  assert.deepEqual(await tool.execute(args, { signal: AbortSignal.abort() }), aborted)
  assert.equal(called, 0)
  const controller = new AbortController()
  const running = tool.execute(args, { signal: controller.signal })
  while (called === 0) await new Promise((resolve) => setImmediate(resolve))
  controller.abort()
  assert.deepEqual(await running, aborted)
})

test('a provider error reaches the model as `Error: <message>`', async () => {
  const ctx = new Context()
  ctx.userQuestions.registerProvider({
    ask() {
      throw new UserQuestionError('the user cancelled ask_user_question', 'ASK_CANCELLED')
    },
  })
  const tool = new AskUserQuestionTool(ctx)
  assert.deepEqual(
    await tool.execute({ questions: [{ id: 'a', question: 'q' }] }),
    failure('ASK_CANCELLED', 'the user cancelled ask_user_question'),
  )
})

test('refusals of the tool before the core can read them are numbered and journaled like its other refusals', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'uq-tool-journal-'))
  try {
    const file = path.join(dir, 'asks.jsonl')
    const ctx = new Context({ journal: file })
    ctx.userQuestions.registerProvider(new AutoResponder('first'))
    const root = new Agent('root')
    ctx.agents.enter(root)
    const tool = new AskUserQuestionTool(ctx)
    const args = { questions: [{ id: 'a', question: 'q' }] }
    const cyclic = { questions: [] }
    cyclic.self = cyclic
    const results = [
      await tool.execute(cyclic, { agent: root }),
      await tool.execute(args, { signal: 'soon' }),
      await tool.execute({ questions: 'a' }),
      await tool.execute(args, { agent: root }),
    ]
    assert.deepEqual(
      results.map((r) => r.error?.code),
      ['INVALID_REQUEST', 'INVALID_REQUEST', 'INVALID_REQUEST', undefined],
    )
    const lines = fs.readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l))
    assert.deepEqual(
      lines.map((l) => [l.event, l.ask, l.agentId, l.message]),
      [
        ['refused', 1, 'root', results[0].error.message],
        ['refused', 2, undefined, 'signal must be an AbortSignal'],
        ['refused', 3, undefined, 'questions must be an array'],
        ['asked', 4, 'root', undefined],
        ['settled', 4, undefined, undefined],
      ],
    )
    assert.match(results[0].error.message, /^arguments are not JSON data: /)
    ctx.dispose()
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('the tool needs a Context', () => {
  assert.throws(() => new AskUserQuestionTool({}), { name: 'UserQuestionError', code: 'INVALID_ARGUMENT' })
})
