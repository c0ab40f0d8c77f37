// Every code of §10 that JS can meet, raised through the public API. OK is the C ABI's
// success value and INTERNAL a panic caught at a boundary: neither is reachable on purpose.
'use strict'

const { test } = require('node:test')
const assert = require('node:assert/strict')

const { Agent, AutoResponder, CODES, Context, QuestionInbox, UserQuestionError, validateAnswer } = require('..')

const Q = [{ id: 'go', question: 'Proceed?', options: [{ label: 'Yes' }] }]
const YES = { answers: [{ id: 'go', selected: ['Yes'] }] }

function withProvider(ask = () => YES) {
  const ctx = new Context()
  ctx.userQuestions.registerProvider({ ask })
  return ctx
}

const RAISE = {
  ASK_ABORTED: () => withProvider().userQuestions.ask({ questions: Q, signal: AbortSignal.abort() }),
  EMPTY_QUESTIONS: () => withProvider().userQuestions.ask({ questions: [] }),
  CALLER_NOT_LIVE: () => withProvider().userQuestions.ask({ questions: Q, agent: new Agent('x') }),
  DELEGATED_CALLER: () => {
    const ctx = withProvider()
    const root = new Agent('root')
    const child = new Agent('child')
    ctx.agents.enter(root)
    ctx.agents.enter(child, root)
    return ctx.userQuestions.ask({ questions: Q, agent: child })
  },
  BAD_INTENT: () =>
    withProvider().userQuestions.ask({
      questions: [{ ...Q[0], intent: { kind: 'plan-review', approve: 'Nope' }, detail: 'plan' }],
    }),
  NO_PROVIDER: () => new Context().userQuestions.ask({ questions: Q }),
  DUPLICATE_PROVIDER: () => withProvider().userQuestions.registerProvider({ ask: () => YES }),
  ASK_CANCELLED: () => {
    const ctx = new Context()
    const inbox = new QuestionInbox()
    ctx.userQuestions.registerProvider(inbox)
    const asked = ctx.userQuestions.ask({ questions: Q })
    inbox.cancel(1)
    return asked
  },
  INVALID_REQUEST: () => withProvider().userQuestions.ask({ questions: [Q[0], Q[0]] }),
  BAD_ANSWER: () => validateAnswer(Q, { answers: [] }),
  PROVIDER_FAILED: () =>
    withProvider(() => {
      throw new Error('boom')
    }).userQuestions.ask({ questions: Q }),
  NOT_PENDING: () => new QuestionInbox().cancel(1),
  ALREADY_RESOLVED: async () => {
    const ctx = new Context()
    const inbox = new QuestionInbox()
    ctx.userQuestions.registerProvider(inbox)
    const asked = ctx.userQuestions.ask({ questions: Q })
    inbox.answer(1, YES)
    await asked
    inbox.answer(1, YES)
  },
  AGENT_EXISTS: () => {
    const ctx = new Context()
    ctx.agents.enter(new Agent('a'))
    ctx.agents.enter(new Agent('a'))
  },
  INVALID_ARGUMENT: () => new AutoResponder('best'),
  ASK_TIMED_OUT: () => withProvider(() => new Promise(() => {})).userQuestions.ask({ questions: Q, timeoutMs: 5 }),
}

for (const [code, raise] of Object.entries(RAISE)) {
  test(`${code} reaches JS as a UserQuestionError`, async () => {
    let caught
    try {
      await raise()
    } catch (err) {
      caught = err
    }
    assert.ok(caught instanceof UserQuestionError, `no UserQuestionError for ${code}: ${caught}`)
    assert.equal(caught.code, code)
    assert.equal(caught.name, 'UserQuestionError')
    assert.ok(caught.message.length > 0)
  })
}

test('every code but OK and INTERNAL is covered above', () => {
  const unreachable = ['OK', 'INTERNAL']
  assert.deepEqual(
    Object.keys(RAISE).sort(),
    Object.keys(CODES)
      .filter((c) => !unreachable.includes(c))
      .sort(),
  )
})
