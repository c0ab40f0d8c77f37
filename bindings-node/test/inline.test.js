// Waiting asks driven inline, without a runtime (src/inline.rs): an ask that must wait is
// polled again by whoever wakes it and settled on its JS thread — directly when the wake
// comes from that thread (a JS provider's Promise, an inbox answered from JS), else through
// the thread's threadsafe function (the terminal's thread). A waiting ask keeps the process
// alive; once it settles, nothing does.
'use strict'

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { spawn, spawnSync } = require('node:child_process')
const path = require('node:path')
const { Worker } = require('node:worker_threads')

const { Context, QuestionInbox } = require('..')

const PKG = path.resolve(__dirname, '..')
const QUESTIONS = [{ id: 'go', question: 'Proceed?', options: [{ label: 'Yes' }, { label: 'No' }] }]
const YES = { answers: [{ id: 'go', selected: ['Yes'] }] }

/** Runs `source` in a fresh Node process and returns how it ended (killed after 30 s). */
function run(source) {
  return spawnSync(process.execPath, ['-e', source], { encoding: 'utf8', timeout: 30000 })
}

test('1,000 waiting asks on an inbox settle, each with its own answer', async () => {
  const ctx = new Context()
  const inbox = new QuestionInbox()
  ctx.userQuestions.registerProvider(inbox)
  const asks = []
  for (let i = 0; i < 1000; i++) {
    asks.push(ctx.userQuestions.ask({ questions: [{ id: 'n', question: `Number ${i}?` }] }))
  }
  const pending = inbox.pending()
  assert.equal(pending.length, 1000)
  // Answered in reverse order: each ask gets the answer of its own ticket.
  for (const item of [...pending].reverse()) {
    inbox.answer(item.ticket, { answers: [{ id: 'n', selected: [], custom: item.questions[0].question }] })
  }
  const answers = await Promise.all(asks)
  answers.forEach((answer, i) => assert.equal(answer.answers[0].custom, `Number ${i}?`))
})

test('1,000 waiting asks on a JS provider that answers later settle', async () => {
  const ctx = new Context()
  const later = []
  ctx.userQuestions.registerProvider({ ask: () => new Promise((resolve) => later.push(resolve)) })
  const asks = Array.from({ length: 1000 }, () => ctx.userQuestions.ask({ questions: QUESTIONS }))
  while (later.length < 1000) await new Promise((resolve) => setImmediate(resolve))
  for (const resolve of later) resolve(YES)
  const answers = await Promise.all(asks)
  assert.equal(answers.length, 1000)
  for (const answer of answers) assert.deepEqual(answer, YES)
})

test('asks in a worker thread settle there, answered by an inbox and a JS provider', async () => {
  const source = `
    const { parentPort } = require('node:worker_threads')
    const { Context, QuestionInbox } = require(${JSON.stringify(PKG)})
    const Q = ${JSON.stringify(QUESTIONS)}
    const YES = ${JSON.stringify(YES)}
    async function main() {
      const a = new Context()
      const inbox = new QuestionInbox()
      a.userQuestions.registerProvider(inbox)
      const viaInbox = Array.from({ length: 100 }, () => a.userQuestions.ask({ questions: Q }))
      setTimeout(() => { for (const p of inbox.pending()) inbox.answer(p.ticket, YES) }, 10)
      const b = new Context()
      b.userQuestions.registerProvider({ ask: () => new Promise((r) => setTimeout(() => r(YES), 10)) })
      const viaProvider = b.userQuestions.ask({ questions: Q })
      const all = await Promise.all([...viaInbox, viaProvider])
      parentPort.postMessage(all.every((x) => JSON.stringify(x) === JSON.stringify(YES)) ? all.length : 'wrong')
    }
    main().catch((e) => parentPort.postMessage(String(e)))
  `
  const worker = new Worker(source, { eval: true })
  // Listened for from the start: the worker can exit in the same turn that delivers its
  // message, before a listener added after the message would be.
  const exited = new Promise((resolve) => worker.once('exit', resolve))
  const message = await new Promise((resolve, reject) => {
    worker.once('message', resolve)
    worker.once('error', reject)
    worker.once('exit', (code) => reject(new Error(`the worker exited (${code}) before it answered`)))
  })
  assert.equal(message, 101)
  await exited
})

test('an ask answered on the terminal thread settles on the JS thread', async () => {
  // The terminal provider reads its answer on a Rust thread of its own: the ask completes
  // there and its outcome crosses to the JS thread through the threadsafe function.
  const source = `
    const { Context, TerminalProvider } = require(${JSON.stringify(PKG)})
    const { isMainThread } = require('node:worker_threads')
    const ctx = new Context()
    ctx.userQuestions.registerProvider(new TerminalProvider())
    ctx.userQuestions.ask({ questions: ${JSON.stringify(QUESTIONS)} }).then((answer) => {
      process.stdout.write(JSON.stringify(answer) + ' ' + isMainThread + '\\n')
      process.stdin.destroy()
    })
  `
  const child = spawn(process.execPath, ['-e', source], { stdio: ['pipe', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (s) => (stdout += s))
  child.stderr.setEncoding('utf8').on('data', (s) => (stderr += s))
  const killer = setTimeout(() => child.kill('SIGKILL'), 30000)
  child.stdin.write('1\n')
  const [code, signal] = await new Promise((resolve) => child.on('exit', (c, s) => resolve([c, s])))
  clearTimeout(killer)
  assert.equal(signal, null, `the child hung; stderr: ${stderr}`)
  assert.equal(code, 0, stderr)
  assert.equal(stdout, `${JSON.stringify(YES)} true\n`)
})

test('a waiting ask keeps the process alive until a provider answers after a timer, then it exits', () => {
  // The timer is unref'd, so only the waiting ask can keep the process alive until it fires.
  const result = run(`
    const { Context } = require(${JSON.stringify(PKG)})
    const ctx = new Context()
    ctx.userQuestions.registerProvider({
      ask: () => new Promise((resolve) => setTimeout(() => resolve(${JSON.stringify(YES)}), 200).unref()),
    })
    ctx.userQuestions.ask({ questions: ${JSON.stringify(QUESTIONS)} }).then((a) => console.log('answered', a.answers[0].selected[0]))
  `)
  assert.equal(result.error, undefined, `the process did not exit by itself: ${result.error}`)
  assert.equal(result.signal, null)
  assert.equal(result.status, 0, result.stderr)
  assert.equal(result.stdout, 'answered Yes\n')
})

test('a waiting ask keeps the process alive until an inbox is answered after a timer, then it exits', () => {
  const result = run(`
    const { Context, QuestionInbox } = require(${JSON.stringify(PKG)})
    const ctx = new Context()
    const inbox = new QuestionInbox()
    ctx.userQuestions.registerProvider(inbox)
    inbox.subscribe(() => {})
    ctx.userQuestions.ask({ questions: ${JSON.stringify(QUESTIONS)} }).then((a) => console.log('answered', a.answers[0].selected[0]))
    setTimeout(() => inbox.answer(1, ${JSON.stringify(YES)}), 200).unref()
  `)
  assert.equal(result.error, undefined, `the process did not exit by itself: ${result.error}`)
  assert.equal(result.signal, null)
  assert.equal(result.status, 0, result.stderr)
  assert.equal(result.stdout, 'answered Yes\n')
})

test('a JS provider answer settles the ask on the JS thread, without a turn of the event loop', async () => {
  // The provider's Promise resolves in a microtask; the ask must settle before an
  // already-queued setImmediate runs (a thread hop would need the event loop).
  const ctx = new Context()
  let resolveAnswer
  ctx.userQuestions.registerProvider({ ask: () => new Promise((resolve) => (resolveAnswer = resolve)) })
  const asked = ctx.userQuestions.ask({ questions: QUESTIONS })
  while (!resolveAnswer) await new Promise((resolve) => setImmediate(resolve))
  let settled = false
  asked.then(() => (settled = true))
  let immediateRan = false
  setImmediate(() => (immediateRan = true))
  resolveAnswer(YES)
  for (let i = 0; i < 20 && !settled; i++) await null
  assert.equal(settled, true, 'the ask did not settle within microtasks')
  assert.equal(immediateRan, false)
  assert.deepEqual(await asked, YES)
})
