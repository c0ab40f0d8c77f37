// The web provider (§19) and the remote provider (§20) from Node: bound and serving once
// constructed, answered over the HTTP API with fetch and the bearer token, closed by close()
// or `using`, never keeping Node alive with nothing pending; the remote provider's bad input
// and a hub that cannot be reached settling by the ask's deadline.
'use strict'

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { spawnSync } = require('node:child_process')
const net = require('node:net')
const path = require('node:path')

const { Context, RemoteProvider, UserQuestionError, WebProvider } = require('..')

const REQUEST = {
  questions: [{ id: 'go', question: 'Proceed?', options: [{ label: 'Yes' }, { label: 'No' }] }],
}
const YES = { answers: [{ id: 'go', selected: ['Yes'] }] }
const DISPOSED = 'the user-questions provider was disposed before the user answered'

/**
 * One API request with the server's token: `{ status, body }`.
 * @param {WebProvider} web
 * @param {string} method
 * @param {string} path
 * @param {unknown} [body]
 */
async function api(web, method, path, body) {
  const response = await fetch(`http://${web.host}:${web.port}${path}`, {
    method,
    headers: { authorization: `Bearer ${web.token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  return { status: response.status, body: await response.json() }
}

/** The ticket of the first question the API lists, once there is one. */
async function pendingTicket(/** @type {WebProvider} */ web) {
  const deadline = Date.now() + 10_000
  for (;;) {
    const { status, body } = await api(web, 'GET', '/api/v1/questions')
    assert.equal(status, 200)
    if (body.pending.length > 0) return body.pending[0].ticket
    assert.ok(Date.now() < deadline, 'no pending question')
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

/** A loopback port nothing listens on (bound for a moment, then released). */
function unusedPort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.on('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = /** @type {net.AddressInfo} */ (server.address())
      server.close(() => resolve(address.port))
    })
  })
}

test('a web provider is bound and serving once constructed', async () => {
  const web = new WebProvider()
  try {
    assert.equal(web.host, '127.0.0.1')
    assert.ok(web.port > 0)
    assert.equal(web.url, `http://127.0.0.1:${web.port}/?token=${web.token}`)
    assert.equal(web.token.length, 43)
    assert.deepEqual(await api(web, 'GET', '/api/v1/questions'), { status: 200, body: { pending: [] } })
    assert.equal(web.closed, false)
  } finally {
    web.close()
  }
  assert.equal(web.closed, true)
})

test('a token of ones own, and bad input', () => {
  const web = new WebProvider({ listen: '127.0.0.1:0', token: 'my-token' })
  assert.equal(web.token, 'my-token')
  assert.ok(web.url.endsWith('/?token=my-token'))
  web[Symbol.dispose]()
  assert.equal(web.closed, true)
  assert.throws(
    () => new WebProvider({ token: 'has space' }),
    (/** @type {any} */ err) =>
      err instanceof UserQuestionError &&
      err.code === 'INVALID_ARGUMENT' &&
      err.message === 'token must be 1 to 256 characters from A-Z a-z 0-9 - . _ ~',
  )
  assert.throws(
    () => new WebProvider({ listen: 'not an address' }),
    (/** @type {any} */ err) =>
      err.code === 'INVALID_ARGUMENT' && err.message.startsWith('cannot listen on not an address: '),
  )
  assert.throws(
    // @ts-expect-error: a number is not an address
    () => new WebProvider({ listen: 80 }),
    (/** @type {any} */ err) => err.code === 'INVALID_ARGUMENT' && err.message === 'listen must be a string',
  )
})

test('a web provider is answered with fetch and the bearer token', async () => {
  const ctx = new Context()
  const web = new WebProvider()
  const dispose = ctx.userQuestions.registerProvider(web)
  try {
    const asking = ctx.userQuestions.ask(REQUEST)
    const ticket = await pendingTicket(web)
    const path = `/api/v1/questions/${ticket}/answer`
    const refused = await fetch(`http://${web.host}:${web.port}/api/v1/questions`, {
      headers: { authorization: 'Bearer wrong' },
    })
    assert.equal(refused.status, 401)
    const bad = await api(web, 'POST', path, { answers: [{ id: 'nope', selected: [] }] })
    assert.equal(bad.status, 422)
    assert.equal(bad.body.error.code, 'BAD_ANSWER')
    assert.deepEqual(await api(web, 'POST', path, YES), { status: 200, body: { ok: true } })
    assert.deepEqual(await asking, YES)
    const again = await api(web, 'POST', path, YES)
    assert.equal(again.status, 409)
    assert.equal(again.body.error.code, 'ALREADY_RESOLVED')
  } finally {
    dispose()
    web.close()
  }
})

test('close() withdraws a waiting ask and releases the port', async () => {
  const ctx = new Context()
  const web = new WebProvider()
  const dispose = ctx.userQuestions.registerProvider(web)
  const asking = ctx.userQuestions.ask(REQUEST)
  await pendingTicket(web)
  web.close()
  await assert.rejects(asking, (/** @type {any} */ err) => err.code === 'ASK_ABORTED' && err.message === DISPOSED)
  await assert.rejects(fetch(`http://${web.host}:${web.port}/api/v1/questions`))
  // Still registered but closed: a later ask settles the same way.
  await assert.rejects(ctx.userQuestions.ask(REQUEST), (/** @type {any} */ err) => err.code === 'ASK_ABORTED')
  web.close()
  dispose()
})

test('disposing the registration withdraws a waiting ask; the server keeps serving', async () => {
  const ctx = new Context()
  const web = new WebProvider()
  try {
    const dispose = ctx.userQuestions.registerProvider(web)
    const asking = ctx.userQuestions.ask(REQUEST)
    await pendingTicket(web)
    dispose()
    await assert.rejects(asking, (/** @type {any} */ err) => err.code === 'ASK_ABORTED')
    assert.deepEqual(await api(web, 'GET', '/api/v1/questions'), { status: 200, body: { pending: [] } })
  } finally {
    web[Symbol.dispose]()
  }
  assert.equal(web.closed, true)
})

test('a web provider with nothing pending does not keep Node alive', () => {
  const script = `
const { Context, WebProvider } = require(${JSON.stringify(path.resolve(__dirname, '..'))})
const ctx = new Context()
const web = new WebProvider()
ctx.userQuestions.registerProvider(web)
globalThis.keep = { ctx, web }
console.log(web.url.startsWith('http://127.0.0.1:') ? 'serving' : web.url)
`
  const run = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 30_000 })
  assert.equal(run.error, undefined)
  assert.equal(run.status, 0, run.stderr)
  assert.equal(run.stdout, 'serving\n')
  assert.equal(run.stderr, '')
})

test('a remote provider: bad input', () => {
  for (const [url, token] of [
    ['ftp://127.0.0.1:1', 't'],
    ['127.0.0.1:1', 't'],
    ['http://127.0.0.1:1', ''],
    ['http://127.0.0.1:1', 'a b'],
  ]) {
    assert.throws(
      () => new RemoteProvider({ url, token }),
      (/** @type {any} */ err) => err instanceof UserQuestionError && err.code === 'INVALID_ARGUMENT',
      `${url} ${token}`,
    )
  }
  assert.throws(
    () => new RemoteProvider({ url: 'http://127.0.0.1:1' }),
    (/** @type {any} */ err) =>
      err.code === 'INVALID_ARGUMENT' && err.message === 'token must be a non-empty string of visible ASCII characters',
  )
  assert.throws(
    // @ts-expect-error: the URL is required
    () => new RemoteProvider({}),
    (/** @type {any} */ err) => err.code === 'INVALID_ARGUMENT' && err.message === 'url must be a string',
  )
  assert.equal(new RemoteProvider({ url: 'http://127.0.0.1:8700/?token=abc' }).url, 'http://127.0.0.1:8700')
})

test('a remote provider whose hub cannot be reached settles by the deadline', async () => {
  const ctx = new Context()
  const remote = new RemoteProvider({ url: `http://127.0.0.1:${await unusedPort()}`, token: 'secret' })
  const dispose = ctx.userQuestions.registerProvider(remote)
  try {
    await assert.rejects(ctx.userQuestions.ask({ ...REQUEST, timeoutMs: 300 }), (/** @type {any} */ err) => err.code === 'ASK_TIMED_OUT')
    const asking = ctx.userQuestions.ask(REQUEST)
    await new Promise((resolve) => setTimeout(resolve, 50))
    dispose()
    await assert.rejects(asking, (/** @type {any} */ err) => err.code === 'ASK_ABORTED')
  } finally {
    dispose()
  }
})

// §23: an access file of people with tokens of their own. alice's token is ALICE, bob's BOB.
const ALICE = 'alice-token-0123456789'
const BOB = 'bob-token-0123456789'

/** A new access file naming alice and bob; its path. */
function accessFile() {
  const fs = require('node:fs')
  const os = require('node:os')
  const { createHash } = require('node:crypto')
  const sha = (/** @type {string} */ token) => createHash('sha256').update(token).digest('hex')
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'uq-access-'))
  const file = path.join(dir, 'access.toml')
  fs.writeFileSync(
    file,
    `[[person]]\nid = "alice"\nname = "Alice Martin"\ntoken_sha256 = "${sha(ALICE)}"\n\n` +
      `[[person]]\nid = "bob"\ntoken_sha256 = "${sha(BOB)}"\n`,
  )
  return file
}

/**
 * One API request with a person's token: `{ status, body }`.
 * @param {WebProvider} web
 * @param {string} token
 * @param {string} method
 * @param {string} path
 * @param {unknown} [body]
 */
async function as(web, token, method, path, body) {
  const response = await fetch(`http://${web.host}:${web.port}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  return { status: response.status, body: await response.json() }
}

/** The ticket of the first question `token`'s person is shown, once there is one. */
async function ticketFor(/** @type {WebProvider} */ web, /** @type {string} */ token) {
  const deadline = Date.now() + 10_000
  for (;;) {
    const { status, body } = await as(web, token, 'GET', '/api/v1/questions')
    assert.equal(status, 200)
    if (body.pending.length > 0) return body.pending[0].ticket
    assert.ok(Date.now() < deadline, 'no pending question')
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

test('access: people sign in with their own tokens; the URL carries none', async () => {
  const { pathToFileURL } = require('node:url')
  const file = accessFile()
  for (const access of [file, pathToFileURL(file)]) {
    const web = new WebProvider({ access })
    try {
      assert.equal(web.url, `http://127.0.0.1:${web.port}/`)
      assert.deepEqual(await as(web, ALICE, 'GET', '/api/v1/me'), {
        status: 200,
        body: { id: 'alice', name: 'Alice Martin' },
      })
      assert.deepEqual(await as(web, BOB, 'GET', '/api/v1/me'), {
        status: 200,
        body: { id: 'bob', name: 'bob' },
      })
      // The one token is not accepted: people use their own.
      assert.equal((await api(web, 'GET', '/api/v1/me')).status, 401)
    } finally {
      web.close()
    }
  }
})

test('access: bad input', () => {
  const fs = require('node:fs')
  const bad = path.join(path.dirname(accessFile()), 'bad.toml')
  fs.writeFileSync(bad, '[[person]]\nid = "alice"\ntoken_sha256 = "00"\n')
  assert.throws(
    () => new WebProvider({ access: bad }),
    (/** @type {any} */ err) =>
      err instanceof UserQuestionError &&
      err.code === 'INVALID_ARGUMENT' &&
      err.message ===
        `cannot read the access file ${bad}: person "alice": token_sha256 must be 64 lowercase hex characters`,
  )
  const missing = path.join(path.dirname(bad), 'missing.toml')
  assert.throws(
    () => new WebProvider({ access: missing }),
    (/** @type {any} */ err) =>
      err instanceof UserQuestionError &&
      err.code === 'INVALID_ARGUMENT' &&
      err.message.startsWith(`cannot read the access file ${missing}: `),
  )
  assert.throws(
    () => new WebProvider({ token: 'my-token', access: accessFile() }),
    (/** @type {any} */ err) =>
      err instanceof UserQuestionError &&
      err.code === 'INVALID_ARGUMENT' &&
      err.message === 'give token or access, not both',
  )
  assert.throws(
    () => new WebProvider({ access: /** @type {any} */ (42) }),
    (/** @type {any} */ err) => err instanceof UserQuestionError && err.code === 'INVALID_ARGUMENT',
  )
})

test("access: a person's answer carries the respondent; a question for bob is not alice's", async () => {
  const ctx = new Context()
  const web = new WebProvider({ access: accessFile() })
  const dispose = ctx.userQuestions.registerProvider(web)
  try {
    const forBob = ctx.userQuestions.ask({ ...REQUEST, to: ['bob'] })
    const bobs = await ticketFor(web, BOB)
    assert.deepEqual(await as(web, ALICE, 'GET', '/api/v1/questions'), {
      status: 200,
      body: { pending: [] },
    })
    const notHers = await as(web, ALICE, 'POST', `/api/v1/questions/${bobs}/answer`, YES)
    assert.equal(notHers.status, 404)
    assert.equal(notHers.body.error.code, 'NOT_PENDING')

    const asking = ctx.userQuestions.ask(REQUEST)
    const ticket = await ticketFor(web, ALICE)
    assert.notEqual(ticket, bobs)
    assert.deepEqual(await as(web, ALICE, 'POST', `/api/v1/questions/${ticket}/answer`, YES), {
      status: 200,
      body: { ok: true },
    })
    assert.deepEqual(await asking, { ...YES, respondent: { id: 'alice', name: 'Alice Martin' } })
    assert.deepEqual(await as(web, BOB, 'POST', `/api/v1/questions/${bobs}/answer`, YES), {
      status: 200,
      body: { ok: true },
    })
    assert.deepEqual((await forBob).respondent, { id: 'bob', name: 'bob' })
  } finally {
    dispose()
    web.close()
  }
})
