// The shared adapter fixtures (tests/adapters/fixtures): the same input gives the same
// output here and in Python (§21).
'use strict'

const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')

const { Context, UserQuestionError } = require('../..')
const claude = require('../../adapters/claude.js')
const codex = require('../../adapters/codex.js')
const mcp = require('../../adapters/mcp.js')

const FIXTURES = path.join(__dirname, '..', '..', '..', 'tests', 'adapters', 'fixtures')

/** @param {string} name */
function load(name) {
  return JSON.parse(fs.readFileSync(path.join(FIXTURES, `${name}.json`), 'utf8'))
}

/**
 * @param {any} c a case
 * @param {string} key where the expected output is
 * @param {() => unknown} run
 */
function check(c, key, run) {
  if (c.error) {
    assert.throws(run, (err) => {
      assert.ok(err instanceof UserQuestionError)
      assert.deepEqual({ code: err.code, message: err.message }, c.error)
      return true
    })
  } else {
    assert.deepEqual(run(), c[key])
  }
}

const GROUPS = {
  claude: {
    toRequest: (c) => check(c, 'request', () => claude.toRequest(c.input)),
    toResult: (c) => check(c, 'result', () => claude.toResult(c.input, c.answer)),
  },
  codex: {
    toRequest: (c) => check(c, 'request', () => codex.toRequest(c.input)),
    toResult: (c) => check(c, 'result', () => codex.toResult(c.input, c.answer)),
  },
  mcp: {
    toElicitation: (c) => check(c, 'elicitation', () => mcp.toElicitation(c.questions)),
    fromElicitation: (c) => check(c, 'answer', () => mcp.fromElicitation(c.questions, c.result)),
  },
}

for (const [name, groups] of Object.entries(GROUPS)) {
  const fixture = load(name)
  for (const [group, run] of Object.entries(groups)) {
    test(`${name}.${group}: every fixture file has cases of both kinds`, () => {
      assert.ok(fixture[group].some((c) => c.error))
      assert.ok(fixture[group].some((c) => !c.error))
    })
    for (const c of fixture[group]) {
      test(`${name}.${group}: ${c.name}`, () => run(c))
    }
  }
}

const requests = [...load('claude').toRequest, ...load('codex').toRequest].filter((c) => !c.error)
for (const c of requests) {
  test(`a converted request passes the seam's checks and reaches the provider unchanged: ${c.name}`, async () => {
    const ctx = new Context()
    const seen = []
    ctx.userQuestions.registerProvider({
      ask(request) {
        seen.push(request.questions)
        return { answers: request.questions.map((q) => ({ id: q.id, selected: [] })) }
      },
    })
    await ctx.userQuestions.ask(c.request)
    assert.deepEqual(seen, [c.request.questions])
    ctx.dispose()
  })
}

test('every elicitation schema is one the MCP SDK accepts as a form request', () => {
  const { ElicitRequestFormParamsSchema } = require('@modelcontextprotocol/sdk/types.js')
  for (const c of load('mcp').toElicitation.filter((c) => !c.error)) {
    const parsed = ElicitRequestFormParamsSchema.safeParse({ mode: 'form', ...c.elicitation })
    assert.ok(parsed.success, `${c.name}: ${parsed.error}`)
    assert.deepEqual(parsed.data.requestedSchema, c.elicitation.requestedSchema, c.name)
  }
})

test('the adapters load no framework until used', () => {
  const { execFileSync } = require('node:child_process')
  const code = `
    const path = require('node:path')
    const adapters = path.join(path.dirname(require.resolve('user-questions')), 'adapters') + path.sep
    require('user-questions')
    const before = Object.keys(require.cache).filter((f) => f.startsWith(adapters) || f.includes('@modelcontextprotocol'))
    require('user-questions/claude'); require('user-questions/codex'); require('user-questions/mcp')
    const sdk = Object.keys(require.cache).filter((f) => f.includes('@modelcontextprotocol'))
    console.log(JSON.stringify({ before, sdk }))`
  const out = JSON.parse(execFileSync(process.execPath, ['-e', code], { cwd: __dirname, encoding: 'utf8' }))
  assert.deepEqual(out, { before: [], sdk: [] })
})

test('ESM code imports the named exports of the adapters', () => {
  const { execFileSync } = require('node:child_process')
  const code = `
    import { canUseTool, toRequest, toResult, MAX_HEADER } from 'user-questions/claude'
    import * as codex from 'user-questions/codex'
    import { McpElicitationProvider, toElicitation, fromElicitation } from 'user-questions/mcp'
    console.log([canUseTool, toRequest, toResult, codex.toRequest, codex.toResult, McpElicitationProvider,
      toElicitation, fromElicitation].map((f) => typeof f).join(' '), MAX_HEADER)`
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', code], { cwd: __dirname, encoding: 'utf8' })
  assert.equal(out.trim(), `${Array(8).fill('function').join(' ')} 12`)
})
