// JS providers (§3 registerProvider, §4.5): sync, async, throwing; registration rules.
'use strict'

const { test } = require('node:test')
const assert = require('node:assert/strict')

const { AskUserQuestionTool, AutoResponder, Context, QuestionInbox, UserQuestionError } = require('..')

const QUESTIONS = [{ id: 'go', question: 'Proceed?', options: [{ label: 'Yes' }, { label: 'No' }] }]
const YES = { answers: [{ id: 'go', selected: ['Yes'] }] }

async function outcomeWith(ask) {
  const ctx = new Context()
  ctx.userQuestions.registerProvider({ ask })
  try {
    return { value: await ctx.userQuestions.ask({ questions: QUESTIONS }) }
  } catch (error) {
    return { error }
  } finally {
    ctx.dispose()
  }
}

test('a synchronous provider returning an answer', async () => {
  assert.deepEqual(await outcomeWith(() => YES), { value: YES })
})

test('an async provider and a provider returning a thenable', async () => {
  assert.deepEqual(
    await outcomeWith(async () => {
      await new Promise((resolve) => setTimeout(resolve, 5))
      return YES
    }),
    { value: YES },
  )
  assert.deepEqual(await outcomeWith(() => ({ then: (resolve) => resolve(YES) })), { value: YES })
})

test('the provider is called as a method, with this = the provider object', async () => {
  const ctx = new Context()
  const provider = {
    answer: YES,
    ask() {
      return this.answer
    },
  }
  ctx.userQuestions.registerProvider(provider)
  assert.deepEqual(await ctx.userQuestions.ask({ questions: QUESTIONS }), YES)
})

test('answers pass through as given, shape checked only (extra fields dropped)', async () => {
  const odd = { answers: [{ id: 'other', selected: ['Anything'], custom: 'x', extra: 1 }], more: true }
  assert.deepEqual(await outcomeWith(() => odd), {
    value: { answers: [{ id: 'other', selected: ['Anything'], custom: 'x' }] },
  })
})

for (const [name, ask, code, message] of [
  [
    'a synchronous throw of UserQuestionError keeps its code',
    () => {
      throw new UserQuestionError('the user cancelled ask_user_question', 'ASK_CANCELLED')
    },
    'ASK_CANCELLED',
    'the user cancelled ask_user_question',
  ],
  [
    'a rejected UserQuestionError keeps its code',
    async () => {
      throw new UserQuestionError('no terminal', 'PROVIDER_FAILED')
    },
    'PROVIDER_FAILED',
    'no terminal',
  ],
  [
    'a synchronous plain throw is PROVIDER_FAILED with its message',
    () => {
      throw new Error('boom')
    },
    'PROVIDER_FAILED',
    'boom',
  ],
  [
    'a plain rejection is PROVIDER_FAILED with its message',
    () => Promise.reject(new TypeError('bad render')),
    'PROVIDER_FAILED',
    'bad render',
  ],
  [
    'a thrown string is PROVIDER_FAILED naming it',
    () => {
      throw 'just a string'
    },
    'PROVIDER_FAILED',
    'just a string',
  ],
  [
    'a thrown error with an empty message is PROVIDER_FAILED with String(err)',
    () => {
      throw new RangeError('')
    },
    'PROVIDER_FAILED',
    'RangeError',
  ],
  [
    'a rejection with undefined is PROVIDER_FAILED',
    () => Promise.reject(undefined),
    'PROVIDER_FAILED',
    'undefined',
  ],
  [
    'a plain error carrying a Node-style code is still a plain error',
    () => {
      throw Object.assign(new Error('gone'), { code: 'ASK_CANCELLED' })
    },
    'PROVIDER_FAILED',
    'gone',
  ],
  [
    'a UserQuestionError with an unknown code is PROVIDER_FAILED naming the code',
    () => {
      throw new UserQuestionError('m', 'NOT_A_CODE')
    },
    'PROVIDER_FAILED',
    'the user-questions provider failed with an unknown code "NOT_A_CODE": m',
  ],
  [
    'a UserQuestionError with code OK is PROVIDER_FAILED',
    () => {
      throw new UserQuestionError('fine', 'OK')
    },
    'PROVIDER_FAILED',
    'the user-questions provider failed with code OK: fine',
  ],
  [
    'resolving undefined is PROVIDER_FAILED naming the shape',
    () => undefined,
    'PROVIDER_FAILED',
    'the user-questions provider answered with something that is not an answer: answer must be an object',
  ],
  [
    'an answer of the wrong shape is PROVIDER_FAILED naming the path',
    () => ({ answers: [{ id: 'go', selected: [1] }] }),
    'PROVIDER_FAILED',
    'the user-questions provider answered with something that is not an answer: answers[0].selected must be an array of strings',
  ],
  [
    'an answer that JSON cannot carry is PROVIDER_FAILED',
    () => ({ answers: [{ id: 'go', selected: [], n: 1n }] }),
    'PROVIDER_FAILED',
    'the user-questions provider answered with something that is not an answer: Do not know how to serialize a BigInt',
  ],
]) {
  test(name, async () => {
    const { error } = await outcomeWith(ask)
    assert.ok(error instanceof UserQuestionError, String(error))
    assert.equal(error.code, code)
    assert.equal(error.message, message)
  })
}

test('a throwing getter on the thrown value never crashes the process', async () => {
  const nasty = {
    get message() {
      throw new Error('no message for you')
    },
    toString() {
      throw new Error('nor a string')
    },
  }
  const { error } = await outcomeWith(() => {
    throw nasty
  })
  assert.equal(error.code, 'PROVIDER_FAILED')
  assert.equal(error.message, '[object Object]')
})

test('registerProvider throws DUPLICATE_PROVIDER synchronously', () => {
  const ctx = new Context()
  ctx.userQuestions.registerProvider({ ask: () => YES })
  assert.throws(() => ctx.userQuestions.registerProvider({ ask: () => YES }), (err) => {
    assert.ok(err instanceof UserQuestionError)
    assert.equal(err.code, 'DUPLICATE_PROVIDER')
    assert.equal(err.message, 'a user-questions provider is already registered')
    return true
  })
  assert.throws(() => ctx.userQuestions.registerProvider(new QuestionInbox()), { code: 'DUPLICATE_PROVIDER' })
  assert.throws(() => ctx.userQuestions.registerProvider(new AutoResponder()), { code: 'DUPLICATE_PROVIDER' })
})

test('the disposer is idempotent and a stale one never removes a later provider', async () => {
  const ctx = new Context()
  const first = ctx.userQuestions.registerProvider({ ask: () => YES })
  first()
  first()
  assert.equal(ctx.userQuestions.hasProvider, false)
  const NO = { answers: [{ id: 'go', selected: ['No'] }] }
  const second = ctx.userQuestions.registerProvider({ ask: () => NO })
  first()
  assert.deepEqual(await ctx.userQuestions.ask({ questions: QUESTIONS }), NO)
  second[Symbol.dispose]()
  await assert.rejects(ctx.userQuestions.ask({ questions: QUESTIONS }), { code: 'NO_PROVIDER' })
})

test('something without ask(request) is not a provider: INVALID_ARGUMENT', () => {
  const ctx = new Context()
  for (const bad of [undefined, null, 42, {}, { ask: 'yes' }]) {
    assert.throws(() => ctx.userQuestions.registerProvider(bad), {
      name: 'UserQuestionError',
      code: 'INVALID_ARGUMENT',
      message: 'a provider must be an object with an ask(request) method',
    })
  }
})

test('the provider receives validated questions, no agent key when none, and a live signal', async () => {
  const ctx = new Context()
  let seen
  ctx.userQuestions.registerProvider({
    ask(request) {
      seen = request
      return YES
    },
  })
  await ctx.userQuestions.ask({ questions: [{ ...QUESTIONS[0], unknown: 'dropped' }] })
  assert.deepEqual(seen.questions, QUESTIONS)
  assert.equal('agent' in seen, false)
  assert.ok(seen.signal instanceof AbortSignal)
})

test('the AutoResponder is served natively and also works as a plain provider object', async () => {
  const ctx = new Context()
  const recommended = [
    { id: 'pkg', question: 'Which?', options: [{ label: 'npm' }, { label: 'pnpm (Recommended)' }] },
  ]
  const dispose = ctx.userQuestions.registerProvider(new AutoResponder('recommended'))
  assert.deepEqual(await ctx.userQuestions.ask({ questions: recommended }), {
    answers: [{ id: 'pkg', selected: ['pnpm (Recommended)'] }],
  })
  dispose()
  const auto = new AutoResponder('skip')
  ctx.userQuestions.registerProvider({ ask: (request) => auto.ask(request) })
  assert.deepEqual(await ctx.userQuestions.ask({ questions: recommended }), {
    answers: [{ id: 'pkg', selected: [] }],
  })
  assert.equal(auto.policy, 'skip')
  assert.equal(auto.approveIntents, false)
  assert.equal(new AutoResponder().policy, 'first')
  assert.equal(new AutoResponder('first', { approveIntents: true }).approveIntents, true)
  assert.throws(() => new AutoResponder('best'), {
    code: 'INVALID_ARGUMENT',
    message: 'unknown auto-responder policy "best": expected first, recommended or skip',
  })
})

test('a subclass of AutoResponder overriding ask is called in JS', async () => {
  class Logged extends AutoResponder {
    calls = 0
    ask(request) {
      this.calls += 1
      return super.ask(request)
    }
  }
  const ctx = new Context()
  const logged = new Logged('first')
  ctx.userQuestions.registerProvider(logged)
  assert.deepEqual(await ctx.userQuestions.ask({ questions: QUESTIONS }), YES)
  assert.equal(logged.calls, 1)
})

test('a provider that answers after its ask was withdrawn is ignored', async () => {
  const ctx = new Context()
  let late
  ctx.userQuestions.registerProvider({
    ask: () =>
      new Promise((resolve) => {
        late = () => resolve(YES)
      }),
  })
  const controller = new AbortController()
  const asked = ctx.userQuestions.ask({ questions: QUESTIONS, signal: controller.signal })
  while (late === undefined) await new Promise((resolve) => setImmediate(resolve))
  controller.abort()
  await assert.rejects(asked, { code: 'ASK_ABORTED' })
  late()
  await new Promise((resolve) => setTimeout(resolve, 10))
})

test('request.signal behaves as a plain property: enumerable, copied by a spread, assignable', async () => {
  const ctx = new Context()
  let seen
  ctx.userQuestions.registerProvider({
    ask(request) {
      seen = { keys: Object.keys(request), own: Reflect.ownKeys(request), copy: { ...request } }
      request.signal = 'replaced'
      seen.assigned = request.signal
      return YES
    },
  })
  assert.deepEqual(await ctx.userQuestions.ask({ questions: QUESTIONS }), YES)
  assert.deepEqual(seen.keys, ['questions', 'signal'])
  assert.deepEqual(seen.own, ['questions', 'signal'], 'nothing else, no symbol either')
  assert.deepEqual(Reflect.ownKeys(seen.copy), ['questions', 'signal'])
  assert.ok(seen.copy.signal instanceof AbortSignal)
  assert.equal(seen.copy.signal.aborted, false)
  assert.equal(seen.assigned, 'replaced')
  ctx.dispose()
})

test('a signal first read after the withdrawal is already aborted', async () => {
  const ctx = new Context()
  let request
  ctx.userQuestions.registerProvider({
    ask(r) {
      request = r
      return new Promise(() => {})
    },
  })
  const controller = new AbortController()
  const asked = ctx.userQuestions.ask({ questions: QUESTIONS, signal: controller.signal })
  while (request === undefined) await new Promise((resolve) => setImmediate(resolve))
  controller.abort()
  await assert.rejects(asked, { code: 'ASK_ABORTED' })
  assert.equal(request.signal.aborted, true)
  ctx.dispose()
})

/** A Proxy that answers nothing: every look at it (`in`, `instanceof`, a property) throws. */
function revokedProxy() {
  const { proxy, revoke } = Proxy.revocable({}, {})
  revoke()
  return proxy
}

/**
 * The outcome of one ask through `ask()` (the fast path) and one through the tool (the
 * provider called by the native side), each with a provider running `ask`; fails as soon as
 * anything escapes as an unhandled rejection (which would end a host's process).
 */
async function outcomesWithoutEscape(ask) {
  let escaped
  const escape = new Promise((_, reject) => {
    escaped = (reason) => reject(new Error(`an unhandled rejection escaped: ${reason}`))
  })
  escape.catch(() => {})
  process.on('unhandledRejection', escaped)
  const ctx = new Context()
  try {
    ctx.userQuestions.registerProvider({ ask })
    const viaAsk = ctx.userQuestions.ask({ questions: QUESTIONS }).then(
      (value) => ({ value }),
      (error) => ({ code: error.code, message: error.message }),
    )
    const viaTool = new AskUserQuestionTool(ctx)
      .execute({ questions: QUESTIONS })
      .then((result) => (result.isError ? { code: result.error.code, message: result.error.message } : result))
    return await Promise.race([Promise.all([viaAsk, viaTool]), escape])
  } finally {
    process.off('unhandledRejection', escaped)
    ctx.dispose()
  }
}

const NOT_AN_ANSWER = 'the user-questions provider answered with something that is not an answer: '

for (const [name, ask, message] of [
  [
    'throws a revoked Proxy',
    () => {
      throw revokedProxy()
    },
    '[object Object]',
  ],
  ['rejects with a revoked Proxy', () => Promise.reject(revokedProxy()), '[object Object]'],
  [
    'throws a Proxy whose prototype cannot be read (instanceof throws)',
    () => {
      throw new Proxy(new Error('hidden'), {
        getPrototypeOf() {
          throw new Error('no prototype')
        },
      })
    },
    'hidden',
  ],
  [
    'throws a look-alike UserQuestionError whose message getter throws',
    () => {
      throw {
        name: 'UserQuestionError',
        code: 'ASK_CANCELLED',
        get message() {
          throw new Error('no message')
        },
      }
    },
    '[object Object]',
  ],
  [
    'throws a look-alike UserQuestionError whose code getter throws when read again',
    () => {
      let reads = 0
      throw {
        name: 'UserQuestionError',
        message: 'twice',
        get code() {
          if (reads++ > 0) throw new Error('read once')
          return 'ASK_CANCELLED'
        },
      }
    },
    'twice',
  ],
  ['returns a revoked Proxy', () => revokedProxy(), `${NOT_AN_ANSWER}Cannot perform 'has' on a proxy that has been revoked`],
  [
    "returns a Proxy whose `has` trap throws (the look for `then`)",
    () =>
      new Proxy(
        { answers: [] },
        {
          has() {
            throw new Error('no has')
          },
        },
      ),
    `${NOT_AN_ANSWER}no has`,
  ],
  [
    'returns a promise whose constructor getter throws',
    () => {
      const promise = Promise.resolve(YES)
      Object.defineProperty(promise, 'constructor', {
        get() {
          throw new Error('no constructor')
        },
      })
      return promise
    },
    'no constructor',
  ],
]) {
  test(`a provider that ${name}: PROVIDER_FAILED naming what it could, through ask() and the tool, nothing escapes`, async () => {
    const failed = { code: 'PROVIDER_FAILED', message }
    assert.deepEqual(await outcomesWithoutEscape(ask), [failed, failed])
  })
}

test('a UserQuestionError of another copy of the package (a look-alike) passes through with its code', async () => {
  class ForeignError extends Error {
    get name() {
      return 'UserQuestionError'
    }
  }
  const cancelled = { code: 'ASK_CANCELLED', message: 'the user cancelled ask_user_question' }
  assert.deepEqual(
    await outcomesWithoutEscape(() => {
      throw Object.assign(new ForeignError(cancelled.message), { code: cancelled.code })
    }),
    [cancelled, cancelled],
  )
  assert.deepEqual(await outcomesWithoutEscape(() => Promise.reject({ name: 'UserQuestionError', ...cancelled })), [
    cancelled,
    cancelled,
  ])
  // A look-alike whose code is not a string is a plain failure.
  assert.deepEqual(
    await outcomesWithoutEscape(() => {
      throw { name: 'UserQuestionError', code: 8, message: 'eight' }
    }),
    [
      { code: 'PROVIDER_FAILED', message: 'eight' },
      { code: 'PROVIDER_FAILED', message: 'eight' },
    ],
  )
})
