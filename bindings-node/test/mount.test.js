// The page inside the host's own web app (§25) from Node: createFetchHandler mounted under
// /questions in an Express app (through toNodeHandler) and in a Hono app (@hono/node-server),
// each behind the host's own cookie sign-in — one user admitted, one refused — answered over
// HTTP and in Chromium; the event stream through each; the host's own routes untouched; a
// foreign Origin refused; `to` enforced; the client going away ending the stream.
'use strict'

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { execFile } = require('node:child_process')
const fs = require('node:fs')
const path = require('node:path')

const express = require('express')
const { Hono } = require('hono')
const { serve } = require('@hono/node-server')
const { Context, QuestionInbox, UserQuestionError, createFetchHandler, toNodeHandler } = require('..')

const ROOT = path.resolve(__dirname, '..', '..')
const PEOPLE = {
  alice: { id: 'alice', name: 'Alice Martin', groups: ['ops'] },
  bob: { id: 'bob' },
}

/** The host's own sign-in: a cookie naming a known user; anyone else is refused. */
function who(/** @type {Request} */ request) {
  const match = /(?:^|;\s*)user=([^;]*)/.exec(request.headers.get('cookie') ?? '')
  return (match && PEOPLE[/** @type {'alice' | 'bob'} */ (match[1])]) || null
}

/** @param {string} id @param {string[]} to */
function question(id, to) {
  return { questions: [{ id, question: `Deploy ${id}?`, options: [{ label: 'A' }, { label: 'B' }] }], to }
}

/** Express: the page under /questions through toNodeHandler, and a route of the host's own. */
async function expressHost(/** @type {import('..').FetchHandler} */ handler) {
  const app = express()
  app.get('/health', (_req, res) => res.json({ ok: true }))
  app.use('/questions', toNodeHandler(handler))
  const server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s))
  })
  return { base: `http://127.0.0.1:${server.address().port}`, close: () => stop(server) }
}

/** Hono on @hono/node-server: the page under /questions as a Fetch handler. */
async function honoHost(/** @type {import('..').FetchHandler} */ handler) {
  const app = new Hono()
  app.get('/health', (c) => c.json({ ok: true }))
  app.all('/questions', (c) => handler(c.req.raw))
  app.all('/questions/*', (c) => handler(c.req.raw))
  const server = await new Promise((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s))
  })
  return { base: `http://127.0.0.1:${server.address().port}`, close: () => stop(server) }
}

function stop(/** @type {import('node:http').Server} */ server) {
  server.closeAllConnections?.()
  return new Promise((resolve) => server.close(resolve))
}

async function pending(/** @type {QuestionInbox} */ inbox, /** @type {number} */ n) {
  const deadline = Date.now() + 10_000
  while (inbox.pending().length < n) {
    assert.ok(Date.now() < deadline, `${n} pending never came`)
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  return Object.fromEntries(inbox.pending().map((p) => [p.questions[0].id, p.ticket]))
}

/** Chromium and person/tests/page's packages must be here (scripts/setup-browser installs them). */
function requireBrowser() {
  const chromium = process.env.UQ_CHROMIUM || '/usr/bin/chromium'
  const modules = path.join(ROOT, 'person', 'tests', 'page', 'node_modules', 'playwright-core')
  assert.ok(fs.existsSync(chromium), `no chromium at ${chromium}: run scripts/setup-browser`)
  assert.ok(fs.existsSync(modules), `no ${modules}: run scripts/setup-browser`)
}

/** Answers the one waiting question in chromium as `user`; what the page showed. */
function answerInChromium(/** @type {string} */ url, /** @type {string} */ user) {
  const script = path.join(ROOT, 'person', 'tests', 'page', 'answer_mounted.js')
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [script, url, 'A', `user=${user}`], { timeout: 120_000 }, (err, out, errOut) =>
      err ? reject(new Error(`${err.message}\n${errOut}`)) : resolve(JSON.parse(out)),
    )
  })
}

for (const [framework, host] of [
  ['Express', expressHost],
  ['Hono', honoHost],
]) {
  test(`${framework}: the page under /questions behind the host's sign-in`, async () => {
    const ctx = new Context()
    const inbox = new QuestionInbox()
    const registration = ctx.userQuestions.registerProvider(inbox)
    const handler = createFetchHandler(inbox, { authenticate: who, basePath: '/questions' })
    assert.equal(handler.token, null)
    const { base, close } = await host(handler)
    const alice = { cookie: 'user=alice' }
    try {
      const forOps = ctx.userQuestions.ask(question('ops', ['ops']))
      const forBob = ctx.userQuestions.ask(question('bob', ['bob']))
      const tickets = await pending(inbox, 2)

      // The host's own route is its own.
      const health = await fetch(`${base}/health`)
      assert.deepEqual(await health.json(), { ok: true })
      assert.equal(health.headers.get('content-security-policy'), null)
      // Signed out, or refused by the host's sign-in: 401 in the API's shape, §19's headers.
      for (const headers of [{}, { cookie: 'user=mallory' }]) {
        const r = await fetch(`${base}/questions/api/v1/questions`, { headers })
        assert.equal(r.status, 401)
        assert.equal((await r.json()).error.code, 'UNAUTHORIZED')
        assert.equal(r.headers.get('content-security-policy'), "default-src 'self'")
      }
      // The bare prefix leads to the page, served under the prefix with relative URLs.
      const bare = await fetch(`${base}/questions`, { headers: alice, redirect: 'manual' })
      assert.ok([301, 307, 308].includes(bare.status), String(bare.status))
      assert.match(bare.headers.get('location') ?? '', /\/questions\/$/)
      const page = await fetch(`${base}/questions/`, { headers: alice })
      assert.equal(page.status, 200)
      assert.match(await page.text(), /src="app\.js"/)
      // `to` enforced: alice sees the question for ops, not bob's.
      const listed = await (await fetch(`${base}/questions/api/v1/questions`, { headers: alice })).json()
      assert.deepEqual(
        listed.pending.map((/** @type {any} */ p) => p.questions[0].id),
        ['ops'],
      )
      const answerBob = `${base}/questions/api/v1/questions/${tickets.bob}/answer`
      const notHers = await fetch(answerBob, {
        method: 'POST',
        headers: { ...alice, origin: base, 'content-type': 'application/json' },
        body: JSON.stringify({ answers: [{ id: 'bob', selected: ['A'] }] }),
      })
      assert.equal(notHers.status, 404)
      assert.equal((await notHers.json()).error.code, 'NOT_PENDING')

      // The event stream, streamed; the client going away ends it.
      const gone = new AbortController()
      const events = await fetch(`${base}/questions/api/v1/events`, { headers: alice, signal: gone.signal })
      assert.match(events.headers.get('content-type') ?? '', /^text\/event-stream/)
      const reader = /** @type {ReadableStream<Uint8Array>} */ (events.body).getReader()
      let text = ''
      while (!text.includes('event: requested')) {
        const { value, done } = await reader.read()
        assert.ok(!done, 'the stream ended early')
        text += Buffer.from(value).toString()
      }
      assert.match(text, /"id":"ops"/)
      assert.doesNotMatch(text, /"id":"bob"/)
      gone.abort()

      // A POST from another origin is refused.
      const answerOps = `${base}/questions/api/v1/questions/${tickets.ops}/answer`
      const foreign = await fetch(answerOps, {
        method: 'POST',
        headers: { ...alice, origin: 'https://evil.example', 'content-type': 'application/json' },
        body: JSON.stringify({ answers: [{ id: 'ops', selected: ['A'] }] }),
      })
      assert.equal(foreign.status, 403)
      assert.equal((await foreign.json()).error.code, 'FORBIDDEN')

      // Answered as alice in chromium: she is the respondent.
      requireBrowser()
      const seen = await answerInChromium(`${base}/questions/`, 'alice')
      assert.deepEqual(seen.problems, [])
      assert.match(seen.me, /Alice Martin/)
      const answer = await forOps
      assert.deepEqual(answer.answers, [{ id: 'ops', selected: ['A'] }])
      assert.deepEqual(answer.respondent, { id: 'alice', name: 'Alice Martin' })
      // bob answers his own; his name defaults to his id.
      const his = await fetch(answerBob, {
        method: 'POST',
        headers: { cookie: 'user=bob', 'content-type': 'application/json' },
        body: JSON.stringify({ answers: [{ id: 'bob', selected: ['B'] }] }),
      })
      assert.equal(his.status, 200)
      assert.deepEqual((await forBob).respondent, { id: 'bob', name: 'bob' })
    } finally {
      await close()
      handler.close()
      registration()
    }
  })
}

test('a token mount, node:http, and what is refused', async () => {
  const inbox = new QuestionInbox()
  const handler = createFetchHandler(inbox, { token: 'tok-1', basePath: '/q/' })
  assert.equal(handler.token, 'tok-1')
  const server = require('node:http').createServer(toNodeHandler(handler))
  await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(undefined)))
  const base = `http://127.0.0.1:${/** @type {any} */ (server.address()).port}`
  try {
    const login = await fetch(`${base}/q/?token=tok-1`, { redirect: 'manual' })
    assert.equal(login.status, 303)
    assert.equal(login.headers.get('location'), '/q/')
    const cookie = login.headers.get('set-cookie') ?? ''
    assert.ok(cookie.split('; ').includes('Path=/q'), cookie)
    const listed = await fetch(`${base}/q/api/v1/questions`, { headers: { cookie: cookie.split(';')[0] } })
    assert.equal(listed.status, 200)
    // Outside basePath: not the page's.
    assert.equal((await fetch(`${base}/elsewhere`)).status, 404)
    // Over 8 MiB: 413.
    const big = await fetch(`${base}/q/api/v1/questions/1/answer`, {
      method: 'POST',
      headers: { authorization: 'Bearer tok-1' },
      body: Buffer.alloc(8 * 1024 * 1024 + 10, 32),
    })
    assert.equal(big.status, 413)
  } finally {
    await stop(server)
    handler.close()
  }
  assert.equal(handler.closed, true)
  assert.equal(createFetchHandler(inbox).token?.length, 43)
  for (const options of [{ authenticate: who, token: 'x' }, { token: 'not a token' }, { basePath: 'q' }]) {
    assert.throws(
      () => createFetchHandler(inbox, /** @type {any} */ (options)),
      (err) => err instanceof UserQuestionError && err.code === 'INVALID_ARGUMENT',
    )
  }
})
