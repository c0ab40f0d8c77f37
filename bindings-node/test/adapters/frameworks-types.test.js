// `tsc --noEmit` (pinned) over the adapters' types and their JS (checkJs): the framework
// adapters against the frameworks' own declarations; the protocol adapters (claude, codex, mcp)
// with test/adapters/types.ts, which checks among other things that every elicitation field
// the MCP mapping declares is a `PrimitiveSchemaDefinition` of `@modelcontextprotocol/sdk`
// (docs/reference.md §21, §24).
'use strict'

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { spawnSync } = require('node:child_process')
const path = require('node:path')

for (const [what, config] of [
  ['the framework adapters and their declared types', 'tsconfig.frameworks.json'],
  ['the protocol adapters, their declared types and the SDK field check', 'tsconfig.json'],
]) {
  test(`tsc accepts ${what}`, () => {
    const tsc = require.resolve('typescript/bin/tsc')
    const run = spawnSync(process.execPath, [tsc, '--noEmit', '-p', path.join(__dirname, config)], {
      encoding: 'utf8',
      timeout: 120000,
    })
    assert.equal(run.status, 0, run.stdout + run.stderr)
  })
}
