// `tsc --noEmit` (pinned) over the protocol adapters (claude, codex, mcp): their JS (checkJs),
// their declared types, and test/adapters/types.ts, which checks among other things that every
// elicitation field the MCP mapping declares is a `PrimitiveSchemaDefinition` of
// `@modelcontextprotocol/sdk` (docs/reference.md §21, §24).
'use strict'

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { spawnSync } = require('node:child_process')
const path = require('node:path')

test('tsc accepts the protocol adapters, their declared types and the SDK field check', () => {
  const tsc = require.resolve('typescript/bin/tsc')
  const run = spawnSync(process.execPath, [tsc, '--noEmit', '-p', path.join(__dirname, 'tsconfig.json')], {
    encoding: 'utf8',
    timeout: 120000,
  })
  assert.equal(run.status, 0, run.stdout + run.stderr)
})
