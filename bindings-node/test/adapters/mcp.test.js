// McpElicitationProvider against the real MCP SDK: a server and a client connected in one
// process (InMemoryTransport.createLinkedPair()), the client answering elicitation requests.
'use strict'

const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const { Client } = require('@modelcontextprotocol/sdk/client/index.js')
const { McpServer } = require('@modelcontextprotocol/sdk/server/mcp.js')
const { InMemoryTransport } = require('@modelcontextprotocol/sdk/inMemory.js')
const { ElicitRequestSchema } = require('@modelcontextprotocol/sdk/types.js')

const { Context, UserQuestionError } = require('../..')
const {
  CLIENT_GONE,
  McpElicitationProvider,
  NO_ELICITATION,
  supportsFormElicitation,
  toElicitation,
} = require('../../adapters/mcp.js')

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
 * resolves; `toolSignal` makes the tool call's `extra.signal` the ask's signal (as in the
 * examples). The context journals to `journal` when given. The tool asks `batch`, else QUESTIONS.
 */
async function connect({ answer, abortWhen, requestScoped, elicitation, toolSignal, journal, batch = QUESTIONS } = {}) {
  const server = new McpServer({ name: 'host', version: '1.0.0' })
  const questions = new Context(journal ? { journal } : {})
  /** What the tool's asks gave (the answer, or `{code, message}`), in order. */
  const outcomes = []
  let firstSettled
  const first = new Promise((resolve) => (firstSettled = resolve))
  const settle = (value) => {
    outcomes.push(value)
    firstSettled(value)
  }
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
      const signal = toolSignal ? extra.signal : controller.signal
      const result = await questions.userQuestions.ask({ questions: batch, signal })
      settle(result)
      return { content: [{ type: 'text', text: JSON.stringify(result) }] }
    } catch (err) {
      assert.ok(err instanceof UserQuestionError)
      settle({ code: err.code, message: err.message })
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
  return { call, close, client, outcomes, first }
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

/** Typed questions (§24) of every kind form mode carries, with their bounds and defaults. */
const TYPED = [
  { id: 'summary', question: 'Sum it up?', input: { kind: 'text', maxLength: 40 } },
  { id: 'ratio', question: 'Sampling ratio?', input: { kind: 'number', maximum: 1 } },
  { id: 'seats', header: 'Seats', question: 'How many seats?', input: { kind: 'integer', minimum: 1, maximum: 50, default: 5 } },
  { id: 'notify', question: 'Notify on-call?', input: { kind: 'boolean', default: false } },
  { id: 'launch', question: 'Launch day?', input: { kind: 'date', minimum: '2026-01-05' } },
  { id: 'window', question: 'Window opens?', input: { kind: 'datetime' } },
  { id: 'owner', question: 'Owner?', input: { kind: 'email', default: 'ops@example.com' } },
  { id: 'hook', question: 'Webhook?', input: { kind: 'url' } },
]

test('typed questions go to the client as primitive schemas and come back as values', async () => {
  const seen = []
  const { call, close } = await connect({
    batch: TYPED,
    answer: async (request) => {
      seen.push(request.params)
      return {
        action: 'accept',
        content: {
          summary: 'Fixes',
          ratio: 0.5,
          seats: 12,
          notify: true,
          launch: '2026-03-02',
          window: '2026-06-01T22:00:00+02:00',
          owner: 'dev@example.com',
        },
      }
    },
  })
  assert.deepEqual(await call(), {
    answers: [
      { id: 'summary', selected: [], value: 'Fixes' },
      { id: 'ratio', selected: [], value: 0.5 },
      { id: 'seats', selected: [], value: 12 },
      { id: 'notify', selected: [], value: true },
      { id: 'launch', selected: [], value: '2026-03-02' },
      { id: 'window', selected: [], value: '2026-06-01T22:00:00+02:00' },
      { id: 'owner', selected: [], value: 'dev@example.com' },
      { id: 'hook', selected: [] },
    ],
  })
  // The client's handler gets the params after the SDK's own schema check (which strips what it
  // does not know): every field arrives whole, with its type, format, bounds and default.
  assert.deepEqual(seen, [{ mode: 'form', ...toElicitation(TYPED) }])
  const fields = seen[0].requestedSchema.properties
  assert.deepEqual(
    TYPED.map((q) => [fields[q.id].type, fields[q.id].format]),
    [
      ['string', undefined],
      ['number', undefined],
      ['integer', undefined],
      ['boolean', undefined],
      ['string', 'date'],
      ['string', 'date-time'],
      ['string', 'email'],
      ['string', 'uri'],
    ],
  )
  assert.deepEqual([fields.seats.minimum, fields.seats.maximum, fields.seats.default], [1, 50, 5])
  assert.equal(fields.summary.maxLength, 40)
  assert.equal(fields.launch.description, 'Launch day?\nOn or after 2026-01-05.')
  await close()
})

test("a client that applies the schema's defaults answers a typed question left empty with its default", async () => {
  const { call, close } = await connect({
    batch: TYPED,
    elicitation: { form: { applyDefaults: true } },
    answer: async () => ({ action: 'accept', content: { ratio: 0.25 } }),
  })
  assert.deepEqual(await call(), {
    answers: [
      { id: 'summary', selected: [] },
      { id: 'ratio', selected: [], value: 0.25 },
      { id: 'seats', selected: [], value: 5 },
      { id: 'notify', selected: [], value: false },
      { id: 'launch', selected: [] },
      { id: 'window', selected: [] },
      { id: 'owner', selected: [], value: 'ops@example.com' },
      { id: 'hook', selected: [] },
    ],
  })
  await close()
})

test('a typed value that does not fit is PROVIDER_FAILED naming the question', async () => {
  const { call, close } = await connect({ batch: TYPED, answer: async () => ({ action: 'accept', content: { seats: 51 } }) })
  assert.deepEqual(await call(), {
    code: 'PROVIDER_FAILED',
    message: 'the elicitation answer does not fit its questions: question seats value must be at most 50',
  })
  await close()
})

for (const [kind, why] of [
  ['secret', 'MCP sends sensitive data through URL mode only'],
  ['file', 'its fields are strings, numbers and booleans'],
]) {
  test(`a ${kind} question is INVALID_REQUEST naming it, and the client is never asked`, async () => {
    let reached = false
    const { call, close } = await connect({
      batch: [...TYPED, { id: 'extra', question: 'And?', input: { kind } }],
      answer: async () => {
        reached = true
        return { action: 'accept', content: {} }
      },
    })
    assert.deepEqual(await call(), {
      code: 'INVALID_REQUEST',
      message: `question extra asks for a ${kind}, which MCP form elicitation cannot carry: ${why}`,
    })
    assert.equal(reached, false)
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

/** The journal's `settled` lines as `[outcome, code, message]`. */
function settlements(journal) {
  return fs
    .readFileSync(journal, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line))
    .filter((line) => line.event === 'settled')
    .map((line) => [line.outcome, line.code, line.message])
}

/**
 * A tool call waits on an elicitation and its client closes the connection (the transport
 * ends; no `notifications/cancelled` is sent). Returns what the asker got, the client's call's
 * error, the journal's settlements and the unhandled rejections seen meanwhile.
 */
async function clientGone({ toolSignal, requestScoped }) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'uq-mcp-gone-'))
  const journal = path.join(dir, 'journal.jsonl')
  const unhandled = []
  const onUnhandled = (reason) => unhandled.push(reason)
  process.on('unhandledRejection', onUnhandled)
  try {
    let asked
    const askedPromise = new Promise((resolve) => (asked = resolve))
    const host = await connect({
      toolSignal,
      requestScoped,
      journal,
      answer: () => {
        asked()
        return new Promise(() => {}) // the person never answers
      },
    })
    const call = host.call().then(
      () => 'answered',
      (err) => err.code,
    )
    await askedPromise
    await host.client.close()
    const got = await host.first
    const callError = await call
    await host.close()
    // A rejection nobody handles is reported once the microtasks have run: one more turn.
    await new Promise((resolve) => setImmediate(resolve))
    return { got, outcomes: host.outcomes, callError, settled: settlements(journal), unhandled }
  } finally {
    process.off('unhandledRejection', onUnhandled)
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

const ABORTED = ['ASK_ABORTED', 'ask_user_question was aborted before the user answered']

for (const requestScoped of [false, true]) {
  const how = requestScoped ? 'tied to the tool call' : 'one provider for the server'
  test(`the client gone while the tool call's signal holds the ask: ASK_ABORTED, once (${how})`, async () => {
    // The SDK aborts the call's `extra.signal` as the connection closes, before it fails the
    // pending elicitation: the ask is withdrawn (§4.1), the failure after it dropped — as in
    // Python, where the connection's end cancels the call's scope.
    const gone = await clientGone({ toolSignal: true, requestScoped })
    assert.deepEqual(gone.got, { code: ABORTED[0], message: ABORTED[1] })
    assert.equal(gone.outcomes.length, 1)
    assert.deepEqual(gone.settled, [['aborted', ...ABORTED]])
    assert.equal(gone.callError, -32000) // the client's own call ends with the connection
    assert.deepEqual(gone.unhandled, [])
  })

  test(`the client gone while nothing withdraws the ask: PROVIDER_FAILED naming the closed connection, once (${how})`, async () => {
    // The provider cannot reach the person any more (§4.5), with Python's code and message.
    assert.equal(CLIENT_GONE, 'the connection to the MCP client closed before the user answered')
    const gone = await clientGone({ toolSignal: false, requestScoped })
    assert.deepEqual(gone.got, { code: 'PROVIDER_FAILED', message: CLIENT_GONE })
    assert.equal(gone.outcomes.length, 1)
    assert.deepEqual(gone.settled, [['failed', 'PROVIDER_FAILED', CLIENT_GONE]])
    assert.equal(gone.callError, -32000)
    assert.deepEqual(gone.unhandled, [])
  })
}

test('a client already gone when the ask starts: PROVIDER_FAILED naming the closed connection, and nothing is sent', async () => {
  const server = new McpServer({ name: 'host', version: '1.0.0' })
  const client = new Client({ name: 'ui', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } })
  let reached = false
  client.setRequestHandler(ElicitRequestSchema, async () => {
    reached = true
    return { action: 'accept' }
  })
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
  await Promise.all([server.connect(serverSide), client.connect(clientSide)])
  await client.close()
  const questions = new Context()
  questions.userQuestions.registerProvider(new McpElicitationProvider(server))
  await assert.rejects(
    questions.userQuestions.ask({ questions: QUESTIONS }),
    (err) => err instanceof UserQuestionError && err.code === 'PROVIDER_FAILED' && err.message === CLIENT_GONE,
  )
  assert.equal(reached, false)
  questions.dispose()
})
