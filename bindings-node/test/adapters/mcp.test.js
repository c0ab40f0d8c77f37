// McpElicitationProvider against the real MCP SDK: a server and a client connected in one
// process (InMemoryTransport.createLinkedPair()), the client answering elicitation requests.
'use strict'

const { test } = require('node:test')
const assert = require('node:assert/strict')

const { Client } = require('@modelcontextprotocol/sdk/client/index.js')
const { McpServer } = require('@modelcontextprotocol/sdk/server/mcp.js')
const { InMemoryTransport } = require('@modelcontextprotocol/sdk/inMemory.js')
const { ElicitRequestSchema } = require('@modelcontextprotocol/sdk/types.js')

const { Context, UserQuestionError } = require('../..')
const { McpElicitationProvider, NO_ELICITATION, supportsFormElicitation, toElicitation } = require('../../adapters/mcp.js')

const QUESTIONS = [
  {
    id: 'pkg',
    header: 'Packages',
    question: 'Which package manager should we use?',
    options: [{ label: 'pnpm (Recommended)', description: 'Fast, strict node_modules.' }, { label: 'npm' }],
  },
  {
    id: 'ci',
    question: 'Which checks should run in CI?',
    options: [{ label: 'Lint' }, { label: 'Tests' }],
    multiSelect: true,
  },
  { id: 'name', question: 'What should the service be called?' },
]

/**
 * A host that is an MCP server whose tool asks the human through its own client, and a client
 * connected to it in memory. `answer` handles the client's elicitation requests (none: the
 * client does not declare the capability). `abortWhen`, when given, aborts the ask once it
 * resolves.
 */
async function connect({ answer, abortWhen, requestScoped, elicitation } = {}) {
  const server = new McpServer({ name: 'host', version: '1.0.0' })
  const questions = new Context()
  if (!requestScoped) questions.userQuestions.registerProvider(new McpElicitationProvider(server))
  server.registerTool('deploy', { description: 'Asks, then deploys.' }, async (extra) => {
    const dispose = requestScoped
      ? questions.userQuestions.registerProvider(
          new McpElicitationProvider(server, { relatedRequestId: extra.requestId }),
        )
      : () => {}
    const controller = new AbortController()
    if (abortWhen) abortWhen.then(() => controller.abort())
    try {
      const result = await questions.userQuestions.ask({ questions: QUESTIONS, signal: controller.signal })
      return { content: [{ type: 'text', text: JSON.stringify(result) }] }
    } catch (err) {
      assert.ok(err instanceof UserQuestionError)
      return { content: [{ type: 'text', text: JSON.stringify({ code: err.code, message: err.message }) }] }
    } finally {
      dispose()
    }
  })
  const client = new Client(
    { name: 'ui', version: '1.0.0' },
    { capabilities: elicitation !== undefined ? { elicitation } : answer ? { elicitation: { form: {} } } : {} },
  )
  if (answer) client.setRequestHandler(ElicitRequestSchema, answer)
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
  await Promise.all([server.connect(serverSide), client.connect(clientSide)])
  // The SDK (1.32.2) ignores `notifications/cancelled` for request id 0 (`if (!requestId)`,
  // modelcontextprotocol/typescript-sdk#2115): a first server-to-client request (a ping)
  // makes the elicitation's id non-zero.
  await server.server.ping()
  const call = async () => {
    const result = await client.callTool({ name: 'deploy', arguments: {} })
    return JSON.parse(result.content[0].text)
  }
  const close = async () => {
    await client.close()
    await server.close()
    questions.dispose()
  }
  return { call, close }
}

for (const requestScoped of [false, true]) {
  test(`the client answers the form and the asker gets the answer (${requestScoped ? 'tied to the tool call' : 'one provider for the server'})`, async () => {
    const seen = []
    const { call, close } = await connect({
      requestScoped,
      answer: async (request) => {
        seen.push(request.params)
        return { action: 'accept', content: { pkg: 'npm', ci: ['Lint', 'Tests'], 'ci.other': 'Coverage', name: 'api' } }
      },
    })
    assert.deepEqual(await call(), {
      answers: [
        { id: 'pkg', selected: ['npm'] },
        { id: 'ci', selected: ['Lint', 'Tests'], custom: 'Coverage' },
        { id: 'name', selected: [], custom: 'api' },
      ],
    })
    assert.deepEqual(seen, [{ mode: 'form', ...toElicitation(QUESTIONS) }])
    await close()
  })
}

for (const action of ['decline', 'cancel']) {
  test(`${action} is ASK_CANCELLED`, async () => {
    const { call, close } = await connect({ answer: async () => ({ action }) })
    assert.deepEqual(await call(), { code: 'ASK_CANCELLED', message: 'the user cancelled ask_user_question' })
    await close()
  })
}

test('an answer outside the options is PROVIDER_FAILED naming the field', async () => {
  const { call, close } = await connect({ answer: async () => ({ action: 'accept', content: { pkg: 'yarn' } }) })
  assert.deepEqual(await call(), {
    code: 'PROVIDER_FAILED',
    message: 'elicitation field "pkg" selects "yarn", which is not one of its options',
  })
  await close()
})

test('a client without elicitation fails the ask with a clear message', async () => {
  const { call, close } = await connect()
  assert.deepEqual(await call(), { code: 'PROVIDER_FAILED', message: NO_ELICITATION })
  await close()
})

test("a withdrawn ask cancels the client's request", async () => {
  let asked
  const askedPromise = new Promise((resolve) => (asked = resolve))
  let cancelled
  const cancelledPromise = new Promise((resolve) => (cancelled = resolve))
  const { call, close } = await connect({
    abortWhen: askedPromise,
    answer: (_request, extra) =>
      new Promise((_resolve, reject) => {
        extra.signal.addEventListener('abort', () => {
          cancelled(extra.signal.reason)
          reject(new Error('cancelled by the server'))
        })
        asked()
      }),
  })
  assert.deepEqual(await call(), {
    code: 'ASK_ABORTED',
    message: 'ask_user_question was aborted before the user answered',
  })
  await cancelledPromise
  await close()
})

test('a client declaring elicitation without modes asks in form mode; one declaring only URL mode cannot answer', async () => {
  const answer = async () => ({ action: 'accept', content: { pkg: 'npm' } })
  const formByDefault = await connect({ answer, elicitation: {} })
  assert.deepEqual(await formByDefault.call(), {
    answers: [
      { id: 'pkg', selected: ['npm'] },
      { id: 'ci', selected: [] },
      { id: 'name', selected: [] },
    ],
  })
  await formByDefault.close()
  let reached = false
  const urlOnly = await connect({
    answer: async () => {
      reached = true
      return { action: 'accept' }
    },
    elicitation: { url: {} },
  })
  assert.deepEqual(await urlOnly.call(), { code: 'PROVIDER_FAILED', message: NO_ELICITATION })
  assert.equal(reached, false)
  await urlOnly.close()
  // An empty elicitation object means form mode (the protocol's backwards-compatible default).
  assert.equal(supportsFormElicitation({ elicitation: {} }), true)
  assert.equal(supportsFormElicitation({ elicitation: { form: {}, url: {} } }), true)
  // `null` is absent, as in Python: `{url: null}` declares no URL mode, `{form: null}` no form.
  assert.equal(supportsFormElicitation({ elicitation: { url: null } }), true)
  assert.equal(supportsFormElicitation({ elicitation: { form: null, url: {} } }), false)
  for (const capabilities of [undefined, null, {}, { elicitation: null }, { elicitation: true }, { elicitation: { url: {} } }]) {
    assert.equal(supportsFormElicitation(capabilities), false, JSON.stringify(capabilities))
  }
})

test('a client whose elicitation request fails: PROVIDER_FAILED naming the client and its error', async () => {
  const { call, close } = await connect({
    answer: async () => {
      throw new Error('the form could not be shown')
    },
  })
  const outcome = await call()
  assert.equal(outcome.code, 'PROVIDER_FAILED')
  assert.match(outcome.message, /^the MCP client failed the elicitation: .*the form could not be shown$/)
  await close()
})

test('the constructor refuses what is not an MCP server', () => {
  assert.throws(
    () => new McpElicitationProvider({}),
    (err) => err instanceof UserQuestionError && err.code === 'INVALID_ARGUMENT',
  )
})
