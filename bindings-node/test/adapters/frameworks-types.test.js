// `tsc --noEmit` (pinned) over the framework adapters' types and their JS (checkJs), against the
// frameworks' own declarations.
'use strict'

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { spawnSync } = require('node:child_process')
const path = require('node:path')

test('tsc accepts the framework adapters and their declared types', () => {
  const tsc = require.resolve('typescript/bin/tsc')
  const run = spawnSync(process.execPath, [tsc, '--noEmit', '-p', path.join(__dirname, 'tsconfig.frameworks.json')], {
    encoding: 'utf8',
    timeout: 120000,
  })
  assert.equal(run.status, 0, run.stdout + run.stderr)
})
