// The examples in examples/node run and print what they promise. They import the package by
// name, so they run from a scratch directory whose node_modules links to this package; the
// TypeScript example is transpiled there with the pinned typescript (tsc type-checks it too).
'use strict'

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const ts = require('typescript')

const EXAMPLES = path.resolve(__dirname, '..', '..', 'examples', 'node')

function scratch() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'uq-examples-'))
  fs.mkdirSync(path.join(dir, 'node_modules'))
  fs.symlinkSync(path.resolve(__dirname, '..'), path.join(dir, 'node_modules', 'user-questions'), 'dir')
  return dir
}

function run(file) {
  const result = spawnSync(process.execPath, [file], { encoding: 'utf8', timeout: 20000 })
  assert.equal(result.signal, null, `${file} hung`)
  assert.equal(result.status, 0, result.stderr)
  return result.stdout
}

test('agent-tool.ts: the tool asks through a TypeScript provider', () => {
  const dir = scratch()
  try {
    const source = fs.readFileSync(path.join(EXAMPLES, 'agent-tool.ts'), 'utf8')
    const { outputText } = ts.transpileModule(source, {
      compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 },
    })
    const file = path.join(dir, 'agent-tool.js')
    fs.writeFileSync(file, outputText)
    assert.equal(
      run(file),
      [
        '[model] tools: ask_user_question',
        '[ui] main asks pkg: Which package manager should I use? [pnpm (Recommended) | npm]',
        '[ui] main asks extras: Install extras? [lint | test]',
        '[tool] {"answers":[{"id":"pkg","selected":["pnpm (Recommended)"]},{"id":"extras","selected":["lint"]}]}',
        "[tool] DELEGATED_CALLER: Error: human interaction is unavailable while the calling agent is owned by another live agent; include the unresolved question or decision in the child agent's final result",
        '[host] EMPTY_QUESTIONS: ask_user_question requires at least one question',
        '',
      ].join('\n'),
    )
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('inbox-ui.mjs: two UIs on one inbox, first answer wins, withdrawals leave both, before the asker resumes', () => {
  const dir = scratch()
  try {
    const file = path.join(dir, 'inbox-ui.mjs')
    fs.copyFileSync(path.join(EXAMPLES, 'inbox-ui.mjs'), file)
    assert.equal(
      run(file),
      [
        '[web] shows #1: Deploy to production?',
        '[chat] shows #1: Deploy to production?',
        '[web] drops #1 (answered)',
        '[chat] drops #1 (answered)',
        '[web] answered #1',
        '[chat] ALREADY_RESOLVED: question 1 is already resolved',
        '[agent] got {"answers":[{"id":"deploy","selected":["Yes"]}]}',
        '[web] shows #2: Deploy to production?',
        '[chat] shows #2: Deploy to production?',
        '[replay] pending: #2',
        '[web] drops #2 (aborted)',
        '[chat] drops #2 (aborted)',
        '[agent] ASK_ABORTED',
        '[replay] pending: 0',
        '',
      ].join('\n'),
    )
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('mounted-page.mjs: the page in Express and in Hono, answered as the signed-in person', () => {
  const dir = scratch()
  try {
    for (const name of ['express', 'hono', '@hono']) {
      fs.symlinkSync(path.resolve(__dirname, '..', 'node_modules', name), path.join(dir, 'node_modules', name), 'dir')
    }
    const file = path.join(dir, 'mounted-page.mjs')
    fs.copyFileSync(path.join(EXAMPLES, 'mounted-page.mjs'), file)
    const result = spawnSync(process.execPath, [file, '--check'], { encoding: 'utf8', timeout: 20000 })
    assert.equal(result.status, 0, result.stderr)
    const answer = '{"answers":[{"id":"deploy","selected":["Deploy"]}],"respondent":{"id":"alice","name":"Alice Martin"}}'
    assert.equal(result.stdout, `express: 200 ${answer}\nhono: 200 ${answer}\n`)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})
