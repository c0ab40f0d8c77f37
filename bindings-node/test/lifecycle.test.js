// Process lifetime (§11 Node): a registered provider keeps nothing alive when nothing
// is pending; ESM can import the CommonJS entry.
'use strict'

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { spawnSync } = require('node:child_process')
const path = require('node:path')

test('a script with registered providers and subscriptions exits on its own', () => {
  const script = path.join(__dirname, 'fixtures', 'exits-on-its-own.js')
  const run = spawnSync(process.execPath, [script], { encoding: 'utf8', timeout: 20000 })
  assert.equal(run.error, undefined, `the script did not exit on its own: ${run.error}`)
  assert.equal(run.signal, null, 'the script was killed: it hung')
  assert.equal(run.status, 0, run.stderr)
  assert.equal(run.stdout, 'ASK_ABORTED\nsettled\n')
})

test('ESM code imports the named exports of the CommonJS entry', () => {
  const source = `
    import { Context, Agent, UserQuestionError, QuestionInbox, AutoResponder,
             AskUserQuestionTool, validateAnswer, CODES } from 'user-questions'
    import pkg from 'user-questions'
    const names = [Context, Agent, UserQuestionError, QuestionInbox, AutoResponder,
                   AskUserQuestionTool, validateAnswer].map((x) => typeof x)
    console.log(names.join(','), CODES.NO_PROVIDER, pkg.Context === Context)
  `
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', source], {
    cwd: path.join(__dirname, '..'),
    encoding: 'utf8',
    timeout: 20000,
  })
  assert.equal(run.status, 0, run.stderr)
  assert.equal(run.stdout.trim(), 'function,function,function,function,function,function,function 6 true')
})

test('works in worker threads, and terminating a worker with a waiting ask is clean', async () => {
  const { Worker } = require('node:worker_threads')
  const source = `
    const { parentPort } = require('node:worker_threads')
    const { Context } = require(${JSON.stringify(path.join(__dirname, '..'))})
    const ctx = new Context()
    let n = 0
    ctx.userQuestions.registerProvider({
      ask: () => (++n === 1 ? { answers: [{ id: 'a', selected: ['w'] }] } : new Promise(() => {})),
    })
    ctx.userQuestions.ask({ questions: [{ id: 'a', question: 'q' }] }).then((a) => {
      parentPort.postMessage(a)
      ctx.userQuestions.ask({ questions: [{ id: 'a', question: 'q' }] })
      setTimeout(() => parentPort.postMessage('waiting'), 20)
    })
  `
  const worker = new Worker(source, { eval: true })
  const messages = []
  await new Promise((resolve, reject) => {
    worker.on('message', (m) => {
      messages.push(m)
      if (m === 'waiting') resolve()
    })
    worker.on('error', reject)
  })
  assert.deepEqual(messages, [{ answers: [{ id: 'a', selected: ['w'] }] }, 'waiting'])
  assert.equal(await worker.terminate(), 1)
})
