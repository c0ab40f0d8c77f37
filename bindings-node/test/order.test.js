// §4.7, the order a UI sees: when an ask is withdrawn (the caller's abort, the provider's
// disposal, the context's disposal, its deadline), the provider's AbortSignal listeners have
// run, and inbox subscribers have received `resolved`, before the asker's `await` resumes; an
// answer from another thread is delivered (event, then settlement) in that order too; and an
// asker that asks again at once never sees its new question overtake the old one's removal.
'use strict'

const { test } = require('node:test')
const assert = require('node:assert/strict')

const { Context, QuestionInbox } = require('..')
const { inboxNativeOf } = require('../lib/inbox.js')

const Q = [{ id: 'go', question: 'Proceed?', options: [{ label: 'Yes' }, { label: 'No' }] }]
const YES = { answers: [{ id: 'go', selected: ['Yes'] }] }

/** The asker's side of the log: `asker <code>` or `asker answered`, when its await resumes. */
function asker(log, promise) {
  return promise.then(
    () => log.push('asker answered'),
    (err) => log.push(`asker ${err.code}`),
  )
}

/** A JS provider that logs its call and its signal's abort, and never answers. */
function jsProvider(ctx, log) {
  let called
  const reached = new Promise((resolve) => {
    called = resolve
  })
  const dispose = ctx.userQuestions.registerProvider({
    ask({ signal }) {
      log.push('provider called')
      signal.addEventListener('abort', () => log.push('provider signal'))
      called()
      return new Promise(() => {})
    },
  })
  return { reached, dispose }
}

/** An inbox provider with a subscriber that logs events. */
function inboxProvider(ctx, log) {
  const inbox = new QuestionInbox()
  const dispose = ctx.userQuestions.registerProvider(inbox)
  inbox.subscribe((e) => log.push(e.type === 'resolved' ? `resolved ${e.ticket} ${e.outcome}` : `${e.type} ${e.ticket}`))
  return { inbox, dispose }
}

const CAUSES = {
  'caller abort': { code: 'ASK_ABORTED', outcome: 'aborted', withdraw: ({ controller }) => controller.abort() },
  'provider dispose': { code: 'ASK_ABORTED', outcome: 'aborted', withdraw: ({ dispose }) => dispose() },
  'context dispose': { code: 'ASK_ABORTED', outcome: 'aborted', withdraw: ({ ctx }) => ctx.dispose() },
  // Long enough that the provider is reached first on a loaded machine (the deadline starts
  // with the ask; one that passes before the provider's turn withdraws the call unseen).
  deadline: { code: 'ASK_TIMED_OUT', outcome: 'timed_out', timeoutMs: 200 },
}

for (const [cause, { code, outcome, withdraw, timeoutMs }] of Object.entries(CAUSES)) {
  test(`${cause}: a JS provider's signal fires before the asker resumes`, async () => {
    const ctx = new Context()
    const log = []
    const { reached, dispose } = jsProvider(ctx, log)
    const controller = new AbortController()
    const done = asker(log, ctx.userQuestions.ask({ questions: Q, signal: controller.signal, timeoutMs }))
    await reached
    if (withdraw) withdraw({ controller, dispose, ctx })
    await done
    assert.deepEqual(log, ['provider called', 'provider signal', `asker ${code}`])
    ctx.dispose()
  })

  test(`${cause}: an inbox subscriber has 'resolved' before the asker resumes`, async () => {
    const ctx = new Context()
    const log = []
    const { dispose } = inboxProvider(ctx, log)
    const controller = new AbortController()
    const done = asker(log, ctx.userQuestions.ask({ questions: Q, signal: controller.signal, timeoutMs }))
    if (withdraw) withdraw({ controller, dispose, ctx })
    await done
    assert.deepEqual(log, ['requested 1', `resolved 1 ${outcome}`, `asker ${code}`])
    ctx.dispose()
  })

  test(`${cause}: an ask made again at once comes after the old question's removal`, async () => {
    const ctx = new Context()
    const log = []
    const { inbox, dispose } = inboxProvider(ctx, log)
    const controller = new AbortController()
    let again
    const done = ctx.userQuestions.ask({ questions: Q, signal: controller.signal, timeoutMs }).catch((err) => {
      log.push(`asker ${err.code}`)
      if (cause === 'provider dispose' || cause === 'context dispose') return
      again = ctx.userQuestions.ask({ questions: Q })
    })
    if (withdraw) withdraw({ controller, dispose, ctx })
    await done
    if (again !== undefined) {
      assert.deepEqual(log, ['requested 1', `resolved 1 ${outcome}`, `asker ${code}`, 'requested 2'])
      inbox.answer(2, YES)
      assert.deepEqual(await again, YES)
    } else {
      assert.deepEqual(log, ['requested 1', `resolved 1 ${outcome}`, `asker ${code}`])
    }
    ctx.dispose()
  })
}

test('a caller abort in the same tick as the ask: the provider never sees the withdrawn ask', async () => {
  const ctx = new Context()
  const log = []
  jsProvider(ctx, log)
  const controller = new AbortController()
  const done = asker(log, ctx.userQuestions.ask({ questions: Q, signal: controller.signal }))
  controller.abort()
  await done
  assert.deepEqual(log, ['asker ASK_ABORTED'])
  // The next ask reaches it as usual (its deadline long enough that the provider is reached
  // first on a loaded machine).
  const next = asker(log, ctx.userQuestions.ask({ questions: Q, timeoutMs: 200 }))
  await next
  assert.deepEqual(log, ['asker ASK_ABORTED', 'provider called', 'provider signal', 'asker ASK_TIMED_OUT'])
  ctx.dispose()
})

test('an inbox answered from another thread: the event, then the settlement, in one turn of this thread', async () => {
  const ctx = new Context()
  const log = []
  const { inbox } = inboxProvider(ctx, log)
  const done = asker(log, ctx.userQuestions.ask({ questions: Q }))
  inboxNativeOf(inbox).answerOnAnotherThread(1, JSON.stringify(YES))
  // The other thread is done; what it caused waits for this thread's next turn.
  assert.deepEqual(log, ['requested 1'])
  await done
  assert.deepEqual(log, ['requested 1', 'resolved 1 answered', 'asker answered'])
  ctx.dispose()
})

test('an answer from another thread, then an ask at once: the new question comes after the removal', async () => {
  const ctx = new Context()
  const log = []
  const { inbox } = inboxProvider(ctx, log)
  let again
  const done = ctx.userQuestions.ask({ questions: Q }).then(() => {
    log.push('asker answered')
    again = ctx.userQuestions.ask({ questions: Q })
  })
  inboxNativeOf(inbox).answerOnAnotherThread(1, JSON.stringify(YES))
  await done
  assert.deepEqual(log, ['requested 1', 'resolved 1 answered', 'asker answered', 'requested 2'])
  inbox.cancel(2)
  await assert.rejects(again, { code: 'ASK_CANCELLED' })
  ctx.dispose()
})

test('an inbox answered from JS: subscribers have the event before answer() returns', async () => {
  const ctx = new Context()
  const log = []
  const { inbox } = inboxProvider(ctx, log)
  const done = asker(log, ctx.userQuestions.ask({ questions: Q }))
  inbox.answer(1, YES)
  log.push('answer returned')
  await done
  assert.deepEqual(log, ['requested 1', 'resolved 1 answered', 'answer returned', 'asker answered'])
  ctx.dispose()
})
