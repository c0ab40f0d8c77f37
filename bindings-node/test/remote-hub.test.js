// A RemoteProvider (§20) from Node against a live hub (`uq serve`): the asker gets the answer
// given on the hub (settled from the provider's own thread), with its key forwarded; a
// cancellation comes back ASK_CANCELLED; an abort withdraws the ask at the hub; and a worker
// terminated with remote asks waiting withdraws them at the hub (its context is dropped).
// Uses UQ_BIN, else an up-to-date target/…/debug/uq, else builds it with cargo.
'use strict'

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { spawn } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { Worker } = require('node:worker_threads')

const { Context, RemoteProvider } = require('..')
const { uqBinary } = require('./fixtures/uq-binary.js')

const Q = [{ id: 'go', question: 'Proceed?', options: [{ label: 'Yes' }, { label: 'No' }] }]
const YES = { answers: [{ id: 'go', selected: ['Yes'] }] }

/** @type {import('node:child_process').ChildProcess | undefined} */
let hub
let url = ''
let dir = ''

before(
  async () => {
    const uq = uqBinary()
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'uq-hub-'))
    const child = spawn(uq, ['serve', '--listen', '127.0.0.1:0', '--store', `sqlite:${path.join(dir, 'hub.db')}`, '--token', 'secret'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    })
    hub = child
    url = await new Promise((resolve, reject) => {
      let err = ''
      child.stderr?.on('data', (chunk) => {
        err += chunk
        const open = /open (\S+)/.exec(err)
        if (open) resolve(open[1])
      })
      child.on('exit', (code) => reject(new Error(`uq serve exited ${code}: ${err}`)))
    })
  },
  { timeout: 900000 },
)

after(() => {
  hub?.kill()
  fs.rmSync(dir, { recursive: true, force: true })
})

/**
 * One API request to the hub: `{ status, body }`.
 * @param {string} method
 * @param {string} route
 * @param {unknown} [body]
 */
async function api(method, route, body) {
  const response = await fetch(`${new URL(url).origin}${route}`, {
    method,
    headers: { authorization: 'Bearer secret', 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  return { status: response.status, body: await response.json() }
}

/**
 * The hub's pending questions whose first question has one of `ids`, once there are as many
 * (polled a bounded number of times).
 * @param {string[]} ids
 */
async function pending(ids) {
  for (let poll = 0; ; poll++) {
    const list = (await api('GET', '/api/v1/questions')).body.pending.filter((/** @type {any} */ p) => ids.includes(p.questions[0].id))
    if (list.length >= ids.length) return list
    assert.ok(poll < 500, `the hub never listed ${ids}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/**
 * The status of the hub's ask `ticket` once it is no longer `pending` (polled a bounded number
 * of times, well within the hub's 60 s lease, after which it would withdraw the ask itself).
 * @param {number} ticket
 */
async function settled(ticket) {
  for (let poll = 0; ; poll++) {
    const { body } = await api('GET', `/api/v1/asks/${ticket}`)
    if (body.status !== 'pending') return body.status
    assert.ok(poll < 500, `ask ${ticket} is still pending at the hub`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

test('a remote ask answered on the hub resolves with that answer; its key is forwarded; a cancellation is ASK_CANCELLED', async () => {
  const ctx = new Context()
  ctx.userQuestions.registerProvider(new RemoteProvider({ url }))
  try {
    const asking = ctx.userQuestions.ask({ questions: Q, key: 'remote-answer' })
    const [question] = await pending(['go'])
    assert.equal(question.key, 'remote-answer')
    assert.deepEqual(question.questions, Q)
    assert.deepEqual(await api('POST', `/api/v1/questions/${question.ticket}/answer`, YES), { status: 200, body: { ok: true } })
    assert.deepEqual(await asking, YES)

    // Its rejection is handled from the start: it may come while the cancel's own reply is on
    // its way (an unhandled rejection then, and the test failed now and then).
    const cancelled = assert.rejects(ctx.userQuestions.ask({ questions: [{ id: 'cancel', question: 'Cancel me?' }] }), {
      code: 'ASK_CANCELLED',
      message: 'the user cancelled ask_user_question',
    })
    const [next] = await pending(['cancel'])
    assert.deepEqual(await api('POST', `/api/v1/questions/${next.ticket}/cancel`), { status: 200, body: { ok: true } })
    await cancelled
  } finally {
    ctx.dispose()
  }
})

test('an abort withdraws the remote ask at the hub', async () => {
  const ctx = new Context()
  ctx.userQuestions.registerProvider(new RemoteProvider({ url }))
  try {
    const controller = new AbortController()
    const asking = ctx.userQuestions.ask({ questions: [{ id: 'abort', question: 'Abort me?' }], signal: controller.signal })
    const [question] = await pending(['abort'])
    controller.abort()
    await assert.rejects(asking, { code: 'ASK_ABORTED', message: 'ask_user_question was aborted before the user answered' })
    assert.equal(await settled(question.ticket), 'withdrawn')
  } finally {
    ctx.dispose()
  }
})

test('a worker terminated with remote asks waiting withdraws them at the hub', async () => {
  const worker = new Worker(
    `
    const { Context, RemoteProvider } = require(${JSON.stringify(path.resolve(__dirname, '..'))})
    const ctx = new Context()
    ctx.userQuestions.registerProvider(new RemoteProvider({ url: ${JSON.stringify(url)} }))
    ctx.userQuestions.ask({ questions: [{ id: 'a', question: 'A?' }] }).catch(() => {})
    ctx.userQuestions.ask({ questions: [{ id: 'b', question: 'B?' }], key: 'worker-b' }).catch(() => {})
    globalThis.keep = ctx
    `,
    { eval: true },
  )
  const questions = await pending(['a', 'b'])
  assert.equal(await worker.terminate(), 1)
  for (const question of questions) assert.equal(await settled(question.ticket), 'withdrawn')
})
