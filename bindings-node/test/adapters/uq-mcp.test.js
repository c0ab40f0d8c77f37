// `uq mcp` spawned by the official MCP TypeScript client (Client + StdioClientTransport): the
// handshake, tools/list (§9's definition as the input schema), tools/call answered by --auto,
// a failure result, an unknown tool, ping, and a cancelled call's ask withdrawn.
// Uses UQ_BIN, else an up-to-date target/…/debug/uq, else builds it with cargo.
'use strict'

const { test, before } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const { Client } = require('@modelcontextprotocol/sdk/client/index.js')
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js')

const { AskUserQuestionTool, Context } = require('../..')

const { uqBinary } = require('../fixtures/uq-binary.js')

let uq = ''
// Building may wait for cargo's lock or rebuild the CLI: longer than a test.
before(
  () => {
    uq = uqBinary()
  },
  { timeout: 900000 },
)

const ARGS = {
  questions: [
    { id: 'pkg', question: 'Which package manager should we use?', options: [{ label: 'pnpm (Recommended)' }, { label: 'npm' }] },
    { id: 'ci', question: 'Which checks should run in CI?', options: [{ label: 'Lint' }, { label: 'Tests' }], multi_select: true },
  ],
}

async function connect(...args) {
  const transport = new StdioClientTransport({ command: uq, args: ['mcp', ...args], stderr: 'pipe' })
  const client = new Client({ name: 'uq-mcp-test', version: '1.0.0' })
  await client.connect(transport)
  return { client, transport }
}

test('the TypeScript client lists and calls ask_user_question', async () => {
  const { client } = await connect('--auto', 'recommended')
  try {
    assert.deepEqual(client.getServerVersion(), { name: 'uq', version: client.getServerVersion()?.version })
    assert.deepEqual(client.getServerCapabilities()?.tools, { listChanged: false })
    assert.deepEqual(await client.ping(), {})
    const { tools } = await client.listTools()
    const definition = new AskUserQuestionTool(new Context()).definition
    assert.equal(tools.length, 1)
    assert.equal(tools[0].name, definition.name)
    assert.equal(tools[0].description, definition.description)
    assert.deepEqual(tools[0].inputSchema, definition.parameters)

    const called = await client.callTool({ name: 'ask_user_question', arguments: ARGS })
    const answer = {
      answers: [
        { id: 'pkg', selected: ['pnpm (Recommended)'] },
        { id: 'ci', selected: ['Lint'] },
      ],
    }
    assert.deepEqual(called, {
      content: [{ type: 'text', text: JSON.stringify(answer) }],
      isError: false,
      structuredContent: answer,
    })
  } finally {
    await client.close()
  }
})

test('seam failures are error results; an unknown tool is a protocol error', async () => {
  const { client } = await connect('--auto', 'first')
  try {
    const empty = await client.callTool({ name: 'ask_user_question', arguments: { questions: [] } })
    assert.deepEqual(empty, {
      content: [{ type: 'text', text: 'Error: ask_user_question requires at least one question' }],
      isError: true,
      structuredContent: {
        error: {
          name: 'UserQuestionError',
          code: 'EMPTY_QUESTIONS',
          message: 'ask_user_question requires at least one question',
        },
      },
    })
    await assert.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }), (err) => {
      assert.equal(err.code, -32602)
      assert.match(err.message, /Unknown tool: no_such_tool/)
      return true
    })
  } finally {
    await client.close()
  }
})

test('a call the client cancels is withdrawn, ping still answers, and uq is gone after close()', async () => {
  // --web keeps the question pending (nobody opens the page), so the call waits until the
  // client cancels it: `notifications/cancelled` withdraws the ask (the journal records it).
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'uq-mcp-'))
  const journal = path.join(dir, 'journal.jsonl')
  const { client, transport } = await connect('--web', '--journal', journal)
  const pid = transport.pid
  try {
    const controller = new AbortController()
    const call = client.callTool({ name: 'ask_user_question', arguments: ARGS }, undefined, { signal: controller.signal })
    assert.deepEqual(await client.ping(), {})
    while (!fs.existsSync(journal) || !fs.readFileSync(journal, 'utf8').includes('"event":"asked"')) {
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    controller.abort()
    await assert.rejects(call)
    let lines = []
    while (lines.length < 2) {
      await new Promise((resolve) => setTimeout(resolve, 10))
      lines = fs.readFileSync(journal, 'utf8').trim().split('\n').map((line) => JSON.parse(line))
    }
    assert.deepEqual(
      lines.map((l) => [l.event, l.outcome]),
      [
        ['asked', undefined],
        ['settled', 'aborted'],
      ],
    )
    assert.deepEqual(await client.ping(), {})
  } finally {
    await client.close()
    fs.rmSync(dir, { recursive: true, force: true })
  }
  // close() ends stdin (the SDK signals the process only when it lingers).
  assert.equal(typeof pid, 'number')
  let alive = true
  for (let i = 0; i < 400 && alive; i++) {
    try {
      process.kill(/** @type {number} */ (pid), 0)
      await new Promise((resolve) => setTimeout(resolve, 25))
    } catch {
      alive = false
    }
  }
  assert.equal(alive, false)
})
