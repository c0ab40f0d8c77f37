// The native addon at its edges: objects still in use that JS dropped (garbage collection),
// a web provider used after it was closed, one provider on two contexts, strings around the
// bound functions' 1 KiB first read, and deadlines (settled on their timer threads) racing
// answers.
'use strict'

const { test } = require('node:test')
const assert = require('node:assert/strict')

const { AskUserQuestionTool, Context, QuestionInbox, WebProvider } = require('..')
const native = require('../native.js')

const Q = [{ id: 'go', question: 'Proceed?', options: [{ label: 'Yes' }, { label: 'No' }] }]
const YES = { answers: [{ id: 'go', selected: ['Yes'] }] }
const DISPOSED = 'the user-questions provider was disposed before the user answered'

/** Collects what it can: a few full collections, with turns in between for finalizers. */
async function collect() {
  assert.ok(global.gc, 'run node with --expose-gc')
  for (let i = 0; i < 4; i++) {
    global.gc()
    await new Promise((resolve) => setImmediate(resolve))
  }
}

/**
 * One API request to a web provider known by its address and token: `{ status, body }`.
 * @param {{ host: string, port: number, token: string }} web
 * @param {string} method
 * @param {string} route
 * @param {unknown} [body]
 */
async function api(web, method, route, body) {
  const response = await fetch(`http://${web.host}:${web.port}${route}`, {
    method,
    headers: { authorization: `Bearer ${web.token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  return { status: response.status, body: await response.json() }
}

/** The tickets the web provider lists, once there are `n`. */
async function pendingTickets(/** @type {{ host: string, port: number, token: string }} */ web, n) {
  const deadline = Date.now() + 10_000
  for (;;) {
    const { body } = await api(web, 'GET', '/api/v1/questions')
    if (body.pending.length >= n) return body.pending.map((/** @type {any} */ p) => p.ticket)
    assert.ok(Date.now() < deadline, `fewer than ${n} pending questions`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

test('a subscription whose unsubscribe function was dropped keeps delivering after a collection', async () => {
  const ctx = new Context()
  const inbox = new QuestionInbox()
  ctx.userQuestions.registerProvider(inbox)
  /** @type {string[]} */
  const log = []
  inbox.subscribe((e) => log.push(`${e.type} ${e.ticket}`))
  await collect()
  const asking = ctx.userQuestions.ask({ questions: Q })
  inbox.answer(1, YES)
  assert.deepEqual(await asking, YES)
  // And from another thread, through the queue.
  const again = ctx.userQuestions.ask({ questions: Q })
  await collect()
  require('../lib/inbox.js').inboxNativeOf(inbox).answerOnAnotherThread(2, JSON.stringify(YES))
  assert.deepEqual(await again, YES)
  assert.deepEqual(log, ['requested 1', 'resolved 1', 'requested 2', 'resolved 2'])
  ctx.dispose()
})

test('a JS provider and a registration that only the context holds still answer after a collection', async () => {
  const ctx = new Context()
  ;(() => {
    // Neither the provider object nor the disposer is kept.
    ctx.userQuestions.registerProvider({
      ask: async (/** @type {any} */ request) => ({
        answers: request.questions.map((/** @type {any} */ q) => ({ id: q.id, selected: ['Yes'] })),
      }),
    })
  })()
  await collect()
  assert.deepEqual(await ctx.userQuestions.ask({ questions: Q }), YES)
  assert.equal(ctx.userQuestions.hasProvider, true)
  ctx.dispose()
})

test('a web provider dropped by JS after its registration keeps serving; a collection under a waiting ask changes nothing', async () => {
  const ctx = new Context()
  /** @type {{ host: string, port: number, token: string }} */
  let address = { host: '', port: 0, token: '' }
  ;(() => {
    const web = new WebProvider()
    address = { host: web.host, port: web.port, token: web.token }
    ctx.userQuestions.registerProvider(web)
  })()
  await collect()
  const asking = ctx.userQuestions.ask({ questions: Q })
  const [ticket] = await pendingTickets(address, 1)
  await collect()
  assert.deepEqual(await api(address, 'POST', `/api/v1/questions/${ticket}/answer`, YES), {
    status: 200,
    body: { ok: true },
  })
  assert.deepEqual(await asking, YES)
  // Disposing the context lets the server go (on a thread of its own); nothing waits on it.
  ctx.dispose()
  await collect()
})

test('a closed web provider: its getters still answer, and asks through it settle ASK_ABORTED within microtasks', async () => {
  const web = new WebProvider()
  const { url, port } = web
  web.close()
  assert.equal(web.closed, true)
  assert.equal(web.url, url)
  assert.equal(web.port, port)
  const ctx = new Context()
  ctx.userQuestions.registerProvider(web)
  for (const request of [{ questions: Q }, { questions: Q, timeoutMs: 60_000 }]) {
    /** @type {string[]} */
    const log = []
    const asking = ctx.userQuestions.ask(request).then(
      () => log.push('answered'),
      (/** @type {any} */ err) => log.push(`${err.code} ${err.message}`),
    )
    // Settled while it started: before the next turn of the event loop.
    await new Promise((resolve) => setImmediate(resolve))
    assert.deepEqual(log, [`ASK_ABORTED ${DISPOSED}`])
    await asking
  }
  web.close()
  ctx.dispose()
})

test('one web provider on two contexts: each registration withdraws only its own asks', async () => {
  const web = new WebProvider()
  const a = new Context()
  const b = new Context()
  const disposeA = a.userQuestions.registerProvider(web)
  b.userQuestions.registerProvider(web)
  try {
    const askingA = a.userQuestions.ask({ questions: Q })
    const askingB = b.userQuestions.ask({ questions: Q })
    const tickets = await pendingTickets(web, 2)
    assert.equal(new Set(tickets).size, 2)
    disposeA()
    await assert.rejects(askingA, (/** @type {any} */ err) => err.code === 'ASK_ABORTED' && err.message === DISPOSED)
    // The page drops the withdrawn question and keeps the other context's.
    const pending = (await api(web, 'GET', '/api/v1/questions')).body.pending
    assert.equal(pending.length, 1)
    const left = pending[0].ticket
    assert.deepEqual(await api(web, 'POST', `/api/v1/questions/${left}/answer`, YES), {
      status: 200,
      body: { ok: true },
    })
    assert.deepEqual(await askingB, YES)
  } finally {
    a.dispose()
    b.dispose()
    web.close()
  }
})

test('one JS provider object on two contexts: each context withdraws only its own asks', async () => {
  /** @type {Array<{ request: any, resolve: (a: unknown) => void, aborted: boolean }>} */
  const calls = []
  const provider = {
    ask(/** @type {any} */ request) {
      return new Promise((resolve) => {
        const call = { request, resolve, aborted: false }
        request.signal.addEventListener('abort', () => {
          call.aborted = true
        })
        calls.push(call)
      })
    },
  }
  const a = new Context()
  const b = new Context()
  a.userQuestions.registerProvider(provider)
  b.userQuestions.registerProvider(provider)
  const askingA = a.userQuestions.ask({ questions: Q })
  const askingB = b.userQuestions.ask({ questions: [{ id: 'b', question: 'B?' }] })
  while (calls.length < 2) await new Promise((resolve) => setImmediate(resolve))
  a.dispose()
  await assert.rejects(askingA, (/** @type {any} */ err) => err.code === 'ASK_ABORTED')
  assert.deepEqual(
    calls.map((c) => [c.request.questions[0].id, c.aborted]),
    [
      ['go', true],
      ['b', false],
    ],
  )
  calls[1].resolve({ answers: [{ id: 'b', selected: [] }] })
  assert.deepEqual(await askingB, { answers: [{ id: 'b', selected: [] }] })
  // The withdrawn call's late answer is dropped.
  calls[0].resolve(YES)
  b.dispose()
})

test('the bound functions read lone surrogates, split surrogate pairs and NULs at every offset around 1 KiB as the methods do', () => {
  const responder = new native.NativeAutoResponder('first', false)
  const answer = responder.answerer()
  const prefix = '[{"id":"q","question":"Q?","options":[{"label":"'
  // Each tail lands at every byte offset across the first read's 1,024 bytes.
  for (let n = 960; n < 1040; n++) {
    for (const tail of ['\ud83d\ude00', '\ud800', '\udc00', '\ud800\ud800', '\ud83d\ude00\udfff', '\u20ac']) {
      for (const filler of ['x', '\u00e9']) {
        const pad = filler.repeat(Math.max(0, n - prefix.length))
        const label = `${pad}${tail}${pad.slice(0, 3)}`
        const text = `${prefix}${label}"}]}]`
        // A lone surrogate is read as U+FFFD (what Node-API writes for it), never cut short.
        const expected = JSON.stringify({ answers: [{ id: 'q', selected: [label.replace(/[\ud800-\udfff]/gu, '\ufffd')] }] })
        assert.equal(answer(text), expected, `${n} ${JSON.stringify(tail)} ${filler}`)
        assert.equal(responder.answer(text), expected)
      }
    }
  }
  // An embedded NUL is read, not taken for the end: JSON refuses it where it stands.
  for (const n of [0, 1018, 1019, 1020, 1021, 1022, 1023, 1024, 3000]) {
    const text = `${prefix}${'x'.repeat(n)}\u0000"}]}]`
    const message = `questions are not valid JSON: control character (\\u0000-\\u001F) found while parsing a string at line 1 column ${prefix.length + n + 1}`
    assert.throws(() => answer(text), { code: 'INVALID_REQUEST', message })
    assert.throws(() => responder.answer(text), { code: 'INVALID_REQUEST', message })
  }
})

test('deadlines racing JS provider answers and inbox answers: each ask settles once, and what a UI sees came first', async () => {
  const A = { answers: [{ id: 'go', selected: [] }] }
  for (const when of ['at once', 'in a microtask', 'in a later turn']) {
    const ctx = new Context()
    /** @type {Map<string, string>} */
    const seen = new Map()
    ctx.userQuestions.registerProvider({
      ask(/** @type {any} */ request) {
        seen.set(request.key, 'called')
        request.signal.addEventListener('abort', () => seen.set(request.key, 'withdrawn'))
        if (when === 'at once') return A
        if (when === 'in a microtask') return Promise.resolve(A)
        return new Promise((resolve) => setImmediate(() => resolve(A)))
      },
    })
    const outcomes = await Promise.all(
      Array.from({ length: 500 }, (_, i) =>
        ctx.userQuestions.ask({ questions: Q, timeoutMs: 1, key: `k${i}` }).then(
          (answer) => {
            assert.deepEqual(answer, A)
            return `answered ${seen.get(`k${i}`)}`
          },
          (/** @type {any} */ err) => `${err.code} ${seen.get(`k${i}`) ?? 'unseen'}`,
        ),
      ),
    )
    for (const outcome of outcomes) {
      // Timed out after the provider was called: its signal fired before the asker resumed.
      assert.ok(['answered called', 'ASK_TIMED_OUT withdrawn', 'ASK_TIMED_OUT unseen'].includes(outcome), `${when}: ${outcome}`)
    }
    ctx.dispose()
  }
  const ctx = new Context()
  const inbox = new QuestionInbox()
  ctx.userQuestions.registerProvider(inbox)
  /** @type {Map<number, string>} */
  const resolved = new Map()
  inbox.subscribe((e) => {
    if (e.type === 'resolved') resolved.set(e.ticket, e.outcome)
  })
  const asks = []
  for (let ticket = 1; ticket <= 500; ticket++) {
    asks.push(
      ctx.userQuestions.ask({ questions: Q, timeoutMs: 1 }).then(
        () => `answered ${resolved.get(ticket)}`,
        (/** @type {any} */ err) => `${err.code} ${resolved.get(ticket)}`,
      ),
    )
    if (ticket % 3 === 0) await new Promise((resolve) => setImmediate(resolve))
    try {
      inbox.answer(ticket, A)
    } catch (err) {
      assert.equal(/** @type {any} */ (err).code, 'ALREADY_RESOLVED')
    }
  }
  for (const outcome of await Promise.all(asks)) {
    assert.ok(['answered answered', 'ASK_TIMED_OUT timed_out'].includes(outcome), outcome)
  }
  ctx.dispose()
})

test('what a registered provider or a subscription calls stays alive until the context is disposed or the subscription ended, then it is collected', async () => {
  /** @type {Set<string>} */
  const collected = new Set()
  const registry = new FinalizationRegistry((/** @type {string} */ name) => collected.add(name))
  /** Collects until `names` are all collected, or gives up after many rounds. */
  const collectUntil = async (/** @type {string[]} */ names) => {
    for (let round = 0; round < 20 && !names.every((n) => collected.has(n)); round++) {
      await collect()
      await new Promise((resolve) => setTimeout(resolve, 1))
    }
  }
  /** @type {() => void} */
  let disposeContext = () => {}
  /** @type {() => void} */
  let unsubscribe = () => {}
  ;(() => {
    // A provider that refers to its own context.
    const ctx = new Context()
    const provider = { ctx, ask: () => YES }
    ctx.userQuestions.registerProvider(provider)
    registry.register(ctx, 'context')
    registry.register(provider, 'provider')
    disposeContext = () => ctx.dispose()
    // A UI that subscribes its own method to its own inbox.
    const inbox = new QuestionInbox()
    const ui = {
      inbox,
      /** @type {unknown} */
      last: undefined,
      on(/** @type {unknown} */ event) {
        this.last = event
      },
    }
    const end = inbox.subscribe((e) => ui.on(e))
    registry.register(inbox, 'inbox')
    registry.register(ui, 'ui')
    unsubscribe = () => end()
  })()
  await collectUntil(['context', 'provider', 'inbox', 'ui'])
  assert.deepEqual([...collected], [])
  disposeContext()
  unsubscribe()
  disposeContext = unsubscribe = () => {}
  await collectUntil(['context', 'provider', 'inbox', 'ui'])
  assert.deepEqual([...collected].sort(), ['context', 'inbox', 'provider', 'ui'])
})

test("the tool's and reviewPlan's deadlines (the timer thread): the provider's signal and the inbox's resolved come before the asker resumes", async () => {
  for (const via of ['tool', 'reviewPlan']) {
    for (const provider of ['JS provider', 'inbox']) {
      const ctx = new Context()
      /** @type {string[]} */
      const log = []
      if (provider === 'JS provider') {
        ctx.userQuestions.registerProvider({
          ask(/** @type {any} */ request) {
            log.push('provider called')
            request.signal.addEventListener('abort', () => log.push('provider signal'))
            return new Promise(() => {})
          },
        })
      } else {
        const inbox = new QuestionInbox()
        ctx.userQuestions.registerProvider(inbox)
        inbox.subscribe((e) => log.push(`${e.type}${e.outcome ? ` ${e.outcome}` : ''}`))
      }
      if (via === 'tool') {
        const result = await new AskUserQuestionTool(ctx).execute({ questions: [{ id: 'go', question: 'Proceed?' }] }, { timeoutMs: 100 })
        log.push(`asker ${result.isError ? result.error?.code : 'answered'}`)
      } else {
        await ctx.userQuestions.reviewPlan('# The plan', { timeoutMs: 100 }).then(
          () => log.push('asker answered'),
          (/** @type {any} */ err) => log.push(`asker ${err.code}`),
        )
      }
      const seen = provider === 'JS provider' ? ['provider called', 'provider signal'] : ['requested', 'resolved timed_out']
      assert.deepEqual(log, [...seen, 'asker ASK_TIMED_OUT'], `${via}, ${provider}`)
      ctx.dispose()
    }
  }
})
