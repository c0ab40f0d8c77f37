// Whom a question is for and who answered (docs/reference.md §23): a request's `to` reaches the
// provider and the inbox's pending question; an answer's `respondent` reaches the asker and the
// `resolved` event's `by`.
'use strict'

const { test } = require('node:test')
const assert = require('node:assert/strict')

const { AskUserQuestionTool, Context, QuestionInbox, UserQuestionError } = require('..')

const QUESTIONS = [{ id: 'go', question: 'Proceed?', options: [{ label: 'Yes' }, { label: 'No' }] }]
const YES = { answers: [{ id: 'go', selected: ['Yes'] }] }
const ALICE = { id: 'alice', name: 'Alice Martin' }
const BAD_TO = 'to must be a list of 1 to 32 person or group names'
const BAD_KEY = 'key must be a non-empty string of at most 256 characters'

function setUp() {
  const ctx = new Context()
  const inbox = new QuestionInbox()
  ctx.userQuestions.registerProvider(inbox)
  const events = []
  inbox.subscribe((event) => events.push(event))
  return { ctx, inbox, events }
}

async function rejection(promise) {
  try {
    await promise
  } catch (err) {
    assert.ok(err instanceof UserQuestionError, String(err))
    return err
  }
  assert.fail('expected a rejection')
}

test('to reaches the inbox pending question, last, and the requested event', async () => {
  const { ctx, inbox, events } = setUp()
  const asked = ctx.userQuestions.ask({ questions: QUESTIONS, to: ['ops', 'alice'] })
  const [pending] = inbox.pending()
  assert.deepEqual(pending.to, ['ops', 'alice'])
  assert.equal(Object.keys(pending).at(-1), 'to')
  assert.deepEqual(events[0].to, ['ops', 'alice'])
  inbox.answer(1, YES)
  assert.deepEqual(await asked, YES)
  ctx[Symbol.dispose]()
})

test('to reaches a JS provider (also with a deadline, a key and an agent-less fast path)', async () => {
  const ctx = new Context()
  const seen = []
  ctx.userQuestions.registerProvider({
    ask(request) {
      seen.push(request)
      return YES
    },
  })
  await ctx.userQuestions.ask({ questions: QUESTIONS, to: ['ops'] })
  await ctx.userQuestions.ask({ questions: QUESTIONS, to: ['é'.repeat(64)], key: 'k', timeoutMs: 60000 })
  await ctx.userQuestions.ask({ questions: QUESTIONS })
  assert.deepEqual(seen[0].to, ['ops'])
  assert.deepEqual(seen[1].to, ['é'.repeat(64)])
  assert.equal(seen[1].key, 'k')
  assert.ok(!('to' in seen[2]))
  ctx[Symbol.dispose]()
})

test('a bad to is INVALID_REQUEST with the exact message, before the provider', async () => {
  const { ctx, inbox } = setUp()
  const names33 = Array.from({ length: 33 }, (_, i) => `p${i}`)
  for (const to of [[], names33, [''], ['é'.repeat(65)], 'ops', [7], ['ops', null], null, {}, [undefined], [1n]]) {
    const err = await rejection(ctx.userQuestions.ask({ questions: QUESTIONS, to }))
    assert.deepEqual([err.code, err.message], ['INVALID_REQUEST', BAD_TO], String(to))
    // Well-formedness first: before the empty questions of §3; the key's check before it.
    const empty = await rejection(ctx.userQuestions.ask({ questions: [], to }))
    assert.equal(empty.message, BAD_TO)
    const keyed = await rejection(ctx.userQuestions.ask({ questions: QUESTIONS, key: '', to }))
    assert.equal(keyed.message, BAD_KEY)
  }
  assert.deepEqual(inbox.pending(), [])
  ctx[Symbol.dispose]()
})

test("an inbox answer's respondent reaches the asker and the resolved event's by", async () => {
  const { ctx, inbox, events } = setUp()
  const asked = ctx.userQuestions.ask({ questions: QUESTIONS })
  for (const [respondent, message] of [
    ['alice', 'respondent must be an object'],
    [{ id: 'alice' }, 'respondent.name must be a string'],
    [{ id: 7, name: 'A' }, 'respondent.id must be a string'],
  ]) {
    assert.throws(
      () => inbox.answer(1, { ...YES, respondent }),
      (err) => err.code === 'BAD_ANSWER' && err.message === message,
    )
  }
  assert.equal(inbox.pending().length, 1)
  inbox.answer(1, { ...YES, respondent: ALICE })
  const answer = await asked
  assert.deepEqual(answer, { ...YES, respondent: ALICE })
  assert.deepEqual(Object.keys(answer), ['answers', 'respondent'])
  assert.deepEqual(events.at(-1), { type: 'resolved', ticket: 1, outcome: 'answered', by: ALICE })
  ctx[Symbol.dispose]()
})

test("a provider's answer keeps its respondent; the tool result leaves it out", async () => {
  const ctx = new Context()
  const answered = { ...YES, respondent: ALICE }
  ctx.userQuestions.registerProvider({ ask: () => answered })
  assert.deepEqual(await ctx.userQuestions.ask({ questions: QUESTIONS }), answered)
  const result = await new AskUserQuestionTool(ctx).execute({ questions: QUESTIONS })
  assert.ok(!JSON.stringify(result).includes('alice'), JSON.stringify(result))
  ctx[Symbol.dispose]()
})

test('cancel by a person names them in the resolved event', async () => {
  const { ctx, inbox, events } = setUp()
  for (const [ticket, by] of [
    [1, ALICE],
    [2, undefined],
  ]) {
    const asked = ctx.userQuestions.ask({ questions: QUESTIONS })
    inbox.cancel(ticket, by)
    assert.equal((await rejection(asked)).code, 'ASK_CANCELLED')
  }
  assert.deepEqual(
    events.filter((e) => e.type === 'resolved'),
    [
      { type: 'resolved', ticket: 1, outcome: 'cancelled', by: ALICE },
      { type: 'resolved', ticket: 2, outcome: 'cancelled' },
    ],
  )
  const asked = ctx.userQuestions.ask({ questions: QUESTIONS })
  assert.throws(
    () => inbox.cancel(3, { id: 'alice' }),
    (err) => err.code === 'INVALID_ARGUMENT',
  )
  assert.equal(inbox.pending().length, 1)
  inbox.cancel(3)
  await rejection(asked)
  ctx[Symbol.dispose]()
})
