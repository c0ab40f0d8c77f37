// The Claude Agent SDK permission handler: AskUserQuestion through the seam, ExitPlanMode
// through plan review (§17), called the way the SDK calls `canUseTool`.
'use strict'

const { test } = require('node:test')
const assert = require('node:assert/strict')

const { Agent, Context, QuestionInbox, UserQuestionError } = require('../..')
const { canUseTool } = require('../../adapters/claude.js')

const INPUT = {
  questions: [
    {
      question: 'Which package manager should we use?',
      header: 'Packages',
      options: [
        { label: 'pnpm (Recommended)', description: 'Fast, strict node_modules.' },
        { label: 'npm', description: 'Ships with Node.' },
      ],
      multiSelect: false,
    },
    {
      question: 'Which checks should run in CI?',
      header: 'CI checks',
      options: [
        { label: 'Lint', description: 'ESLint and Prettier.' },
        { label: 'Tests', description: 'The unit tests.' },
      ],
      multiSelect: true,
    },
  ],
}
const PLAN = '1. Add the column\n2. Backfill it\n3. Drop the old one'

/** The third argument the SDK passes to `canUseTool`. */
function sdkOptions(signal = new AbortController().signal) {
  return { signal, suggestions: [], toolUseID: 'toolu_1' }
}

/** A provider that records each request and answers from a script. */
function scripted(...answers) {
  const requests = []
  return {
    requests,
    ask(request) {
      requests.push(request)
      const answer = answers.shift()
      if (answer instanceof Error) throw answer
      return answer
    },
  }
}

function withProvider(provider) {
  const ctx = new Context()
  ctx.userQuestions.registerProvider(provider)
  return ctx
}

const planAnswer = (selected, custom) => ({
  answers: [custom === undefined ? { id: 'plan', selected } : { id: 'plan', selected, custom }],
})

test('AskUserQuestion asks the seam and allows with the questions and answers', async () => {
  const provider = scripted({
    answers: [
      { id: 'q1', selected: [], custom: 'yarn' },
      { id: 'q2', selected: ['Lint', 'Tests'] },
    ],
  })
  const ctx = withProvider(provider)
  const result = await canUseTool(ctx.userQuestions)('AskUserQuestion', INPUT, sdkOptions())
  assert.deepEqual(
    provider.requests[0].questions.map((q) => q.id),
    ['q1', 'q2'],
  )
  assert.deepEqual(result, {
    behavior: 'allow',
    updatedInput: {
      questions: INPUT.questions,
      answers: {
        'Which package manager should we use?': 'yarn',
        'Which checks should run in CI?': 'Lint, Tests',
      },
    },
  })
  ctx.dispose()
})

test("option previews (§24) reach the provider and come back in the SDK's updatedInput", async () => {
  const diff = '@@ -1 +1 @@\n-retries = 1\n+retries = 3'
  const input = {
    questions: [
      {
        question: 'Which fix should be applied?',
        header: 'Fix',
        options: [
          { label: 'Patch A', description: 'Smallest change.', preview: diff },
          { label: 'Patch B', preview: '# Rewrite\nReplace the retry loop.' },
        ],
        multiSelect: false,
      },
    ],
  }
  const provider = scripted({ answers: [{ id: 'q1', selected: ['Patch A'] }] })
  const ctx = withProvider(provider)
  const result = await canUseTool(ctx.userQuestions)('AskUserQuestion', input, sdkOptions())
  assert.deepEqual(
    provider.requests[0].questions[0].options.map((o) => o.preview),
    [diff, '# Rewrite\nReplace the retry loop.'],
  )
  assert.deepEqual(result, {
    behavior: 'allow',
    updatedInput: { questions: input.questions, answers: { 'Which fix should be applied?': 'Patch A' } },
  })
  ctx.dispose()
})

test("the SDK's abort signal withdraws the ask and denies", async () => {
  const ctx = new Context()
  const inbox = new QuestionInbox()
  ctx.userQuestions.registerProvider(inbox)
  const controller = new AbortController()
  const pending = canUseTool(ctx.userQuestions)('AskUserQuestion', INPUT, sdkOptions(controller.signal))
  await new Promise((resolve) => setImmediate(resolve))
  assert.equal(inbox.pending().length, 1)
  controller.abort()
  assert.deepEqual(await pending, {
    behavior: 'deny',
    message: 'ask_user_question was aborted before the user answered',
  })
  assert.equal(inbox.pending().length, 0)
  ctx.dispose()
})

test('the agent is passed: a delegated agent is denied without reaching the provider', async () => {
  const provider = scripted()
  const ctx = withProvider(provider)
  const root = new Agent('root')
  const child = new Agent('child')
  ctx.agents.enter(root)
  ctx.agents.enter(child, root)
  const result = await canUseTool(ctx.userQuestions, { agent: child })('AskUserQuestion', INPUT, sdkOptions())
  assert.equal(result.behavior, 'deny')
  assert.match(result.message, /^human interaction is unavailable/)
  assert.equal(provider.requests.length, 0)
  ctx.dispose()
})

test("a cancelled question denies with the seam's message", async () => {
  const ctx = withProvider(scripted(new UserQuestionError('the user cancelled ask_user_question', 'ASK_CANCELLED')))
  const result = await canUseTool(ctx.userQuestions)('AskUserQuestion', INPUT, sdkOptions())
  assert.deepEqual(result, { behavior: 'deny', message: 'the user cancelled ask_user_question' })
  ctx.dispose()
})

test('input that does not fit denies without reaching the provider', async () => {
  const provider = scripted()
  const ctx = withProvider(provider)
  const tooLong = { questions: [{ ...INPUT.questions[0], header: 'Package manager' }] }
  const result = await canUseTool(ctx.userQuestions)('AskUserQuestion', tooLong, sdkOptions())
  assert.deepEqual(result, { behavior: 'deny', message: 'questions[0].header is longer than 12 characters' })
  assert.equal(provider.requests.length, 0)
  ctx.dispose()
})

test('ExitPlanMode approved allows the call unchanged; the plan is the question detail', async () => {
  const provider = scripted(planAnswer(['Approve']))
  const ctx = withProvider(provider)
  const result = await canUseTool(ctx.userQuestions)('ExitPlanMode', { plan: PLAN }, sdkOptions())
  assert.deepEqual(result, { behavior: 'allow', updatedInput: { plan: PLAN } })
  const [question] = provider.requests[0].questions
  assert.deepEqual([question.id, question.detail, question.intent], [
    'plan',
    PLAN,
    { kind: 'plan-review', approve: 'Approve' },
  ])
  ctx.dispose()
})

for (const [name, answer, message] of [
  ['feedback', planAnswer([], 'Split step 2 in batches'), 'Split step 2 in batches'],
  ['revise', planAnswer(['Revise']), 'The user wants to keep planning before this plan is carried out.'],
  ['rejected', planAnswer(['Reject']), 'The user rejected this plan.'],
  ['dismissed', planAnswer([]), 'The user dismissed the plan review without approving the plan.'],
]) {
  test(`ExitPlanMode not approved (${name}) denies with the feedback`, async () => {
    const ctx = withProvider(scripted(answer))
    const result = await canUseTool(ctx.userQuestions)('ExitPlanMode', { plan: PLAN }, sdkOptions())
    assert.deepEqual(result, { behavior: 'deny', message })
    ctx.dispose()
  })
}

test('ExitPlanMode without a plan denies without reaching the provider', async () => {
  const provider = scripted()
  const ctx = withProvider(provider)
  const result = await canUseTool(ctx.userQuestions)('ExitPlanMode', {}, sdkOptions())
  assert.deepEqual(result, { behavior: 'deny', message: 'review_plan requires a plan' })
  assert.equal(provider.requests.length, 0)
  ctx.dispose()
})

test("ExitPlanMode: the agent and the SDK's signal reach the plan review", async () => {
  const provider = scripted()
  const ctx = withProvider(provider)
  const root = new Agent('root')
  const child = new Agent('child')
  ctx.agents.enter(root)
  ctx.agents.enter(child, root)
  const delegated = await canUseTool(ctx.userQuestions, { agent: child })('ExitPlanMode', { plan: PLAN }, sdkOptions())
  assert.equal(delegated.behavior, 'deny')
  assert.match(delegated.message, /^human interaction is unavailable/)
  assert.equal(provider.requests.length, 0)
  ctx.dispose()

  const asked = new Context()
  const inbox = new QuestionInbox()
  asked.userQuestions.registerProvider(inbox)
  asked.agents.enter(root)
  const controller = new AbortController()
  const pending = canUseTool(asked.userQuestions, { agent: root })(
    'ExitPlanMode',
    { plan: PLAN },
    sdkOptions(controller.signal),
  )
  await new Promise((resolve) => setImmediate(resolve))
  assert.deepEqual(
    inbox.pending().map((p) => [p.agentId, p.questions[0].detail]),
    [['root', PLAN]],
  )
  controller.abort()
  assert.deepEqual(await pending, {
    behavior: 'deny',
    message: 'ask_user_question was aborted before the user answered',
  })
  assert.deepEqual(inbox.pending(), [])
  asked.dispose()
})

test('AskUserQuestion: an answer that does not fit its questions denies with BAD_ANSWER’s reason, never allows', async () => {
  // Answers pass through unchecked by default (§4.6); the tool result is checked (§6).
  const ctx = withProvider(
    scripted({
      answers: [
        { id: 'q1', selected: ['yarn'] },
        { id: 'q2', selected: [] },
      ],
    }),
  )
  const result = await canUseTool(ctx.userQuestions)('AskUserQuestion', INPUT, sdkOptions())
  assert.deepEqual(result, {
    behavior: 'deny',
    message: 'question q1 selects "yarn", which is not one of its options',
  })
  ctx.dispose()
})

test('other tools go to the fallback, or are denied without one', async () => {
  const ctx = new Context()
  const seen = []
  const options = sdkOptions()
  const withFallback = canUseTool(ctx.userQuestions, {
    fallback: async (toolName, input, extra) => {
      seen.push([toolName, input, extra])
      return { behavior: 'allow', updatedInput: input }
    },
  })
  assert.deepEqual(await withFallback('Bash', { command: 'ls' }, options), {
    behavior: 'allow',
    updatedInput: { command: 'ls' },
  })
  assert.deepEqual(seen, [['Bash', { command: 'ls' }, options]])
  assert.deepEqual(await canUseTool(ctx.userQuestions)('Bash', { command: 'ls' }, options), {
    behavior: 'deny',
    message: "Bash is not allowed by this host's permission handler",
  })
  ctx.dispose()
})
