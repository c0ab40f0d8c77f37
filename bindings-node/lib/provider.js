// @ts-check
// JS providers (§3, §4): wrapped so that nothing they do can crash the process.
'use strict'

const { agentByKey } = require('./agents.js')
const { describe, isUserQuestionError } = require('./errors.js')
const { answerCopy } = require('./snapshot.js')

/**
 * The outcome JSON of one provider call; never throws.
 * @param {unknown} answer
 * @returns {string}
 */
function outcomeOf(answer) {
  try {
    return JSON.stringify({ answer })
  } catch (err) {
    return notAnAnswer(err)
  }
}

/**
 * The outcome JSON of an answer that could not be read (`err`: what reading it threw).
 * @param {unknown} err
 * @returns {string}
 */
function notAnAnswer(err) {
  return JSON.stringify({
    error: {
      code: 'PROVIDER_FAILED',
      message: `the user-questions provider answered with something that is not an answer: ${describe(err)}`,
    },
  })
}

/**
 * The outcome JSON of a provider failure (`err`: what it threw or rejected with); never throws.
 * @param {unknown} err
 * @returns {string}
 */
function failureOf(err) {
  if (isUserQuestionError(err)) {
    try {
      // Read once more, and a getter may answer differently: kept only if still strings.
      const { code, message } = err
      if (typeof code === 'string' && typeof message === 'string') {
        return JSON.stringify({ error: { code, message } })
      }
    } catch {}
  }
  return JSON.stringify({ error: { code: 'PROVIDER_FAILED', message: describe(err) } })
}

/** A settled Promise: its `then` runs a function in a microtask (`queueMicrotask` costs more). */
const resolved = Promise.resolve()

/**
 * @typedef {{ ask(request: Record<string, unknown>): unknown }} Provider
 */

/**
 * An ask's outcome as the asker reads it: its text, or on the fast path the answer itself
 * when the core took the provider's answer as given (a copy of it: see `snapshot.js`).
 * @typedef {string | { answer: import('./snapshot.js').AnswerCopy | unknown }} Outcome
 */

/**
 * One call of a JS provider: its `request.signal`'s controller (made when the provider first
 * reads the signal), whether it was withdrawn, and — on the fast path — how its asker waits.
 */
class Call {
  /** @param {((outcome: Outcome) => void) | undefined} resolve */
  constructor(resolve) {
    /** @type {AbortController | undefined} */
    this.controller = undefined
    this.withdrawn = false
    this.resolve = resolve
  }

  /** The provider's `request.signal`: aborted already when the call was withdrawn. */
  get signal() {
    let controller = this.controller
    if (controller === undefined) {
      controller = this.controller = new AbortController()
      if (this.withdrawn) controller.abort()
    }
    return controller.signal
  }

  /** Withdraws the call: its signal aborts now (its listeners run before this returns). */
  withdraw() {
    this.withdrawn = true
    this.controller?.abort()
  }
}

/**
 * @typedef {{
 *   dispatch: (call: number, payload: string | null, outcome?: string) => void,
 *   run: (payload: string | number, questions?: unknown[]) => Promise<Outcome>,
 * }} Dispatcher
 */

/**
 * The dispatcher of a JS provider, in two halves.
 *
 * `dispatch` is what the native side calls, on this JS thread: `(call, payload)` runs the
 * provider's `ask` in a microtask (never inside the asker's call) and settles the call with
 * its outcome through `calls.settle` — one native call, which settles the ask (sync throws,
 * rejections and odd values all become outcomes); `(call, null)` withdraws call `call`,
 * aborting its `request.signal` synchronously (its listeners run before the asker can resume,
 * §4.7); `(call, null, outcome)` hands a fast-path call its ask's outcome text when it did not
 * come back from `calls.settle` (a withdrawal, a settlement on another thread) — always after
 * the withdrawal that caused it.
 *
 * `run` is the fast path (an ask started on this thread: the native ask returned the payload
 * `{"call":n,…}`, or the number `n` alone, instead of calling `dispatch`): it runs the
 * provider as `dispatch` would and resolves with the ask's outcome. Its `questions`, when
 * given, are the copy the asker's side holds (the payload leaves them out); and a provider's
 * answer that is plain data is sent as a copy, which is what the asker gets when the core
 * takes it as given (`settle` returns `""`).
 *
 * A call withdrawn before its microtask ran never reaches the provider. A provider Promise
 * that never settles leaves its ask waiting (the native side holds the call, not the
 * Promise) until it is withdrawn.
 * @param {Provider} provider
 * @param {import('../native.js').NativeProviderCalls} calls
 * @returns {Dispatcher}
 */
function dispatcherFor(provider, calls) {
  /** @type {Map<number, Call>} */
  const waiting = new Map()
  /** `calls.settle`, bound (one Node-API call, no unwrapping). */
  const settle = calls.settler()
  /**
   * @param {number} call
   * @param {Call} record
   * @param {string} outcome
   * @param {import('./snapshot.js').AnswerCopy} [answer] the copy `outcome` is the JSON of
   */
  const finish = (call, record, outcome, answer) => {
    let text
    try {
      text = settle(call, outcome)
    } catch (err) {
      // Only a panic caught at the addon's boundary can land here; it must not become an
      // unhandled rejection.
      process.emitWarning(`settling a provider call failed: ${describe(err)}`, { code: 'USER_QUESTIONS_INTERNAL' })
    }
    if (record.resolve === undefined) {
      if (waiting.get(call) === record) waiting.delete(call)
    } else if (text != null && waiting.get(call) === record) {
      waiting.delete(call)
      // "": the ask's outcome is `outcome` itself (an answer the core took as given).
      record.resolve(text !== '' ? text : answer !== undefined ? { answer } : outcome)
    }
  }
  /** @type {Dispatcher['dispatch']} */
  const dispatch = (call, payload, outcome) => {
    if (payload == null) {
      const record = waiting.get(call)
      if (record === undefined) return
      if (outcome !== undefined) {
        // A fast-path call's outcome.
        waiting.delete(call)
        record.resolve?.(outcome)
        return
      }
      // A withdrawal; a fast-path call still waits for its outcome, which comes next.
      if (record.resolve === undefined) waiting.delete(call)
      record.withdraw()
      return
    }
    const record = new Call(undefined)
    waiting.set(call, record)
    resolved.then(() => runProvider(provider, call, JSON.parse(payload), record, finish))
  }
  /** @type {Dispatcher['run']} */
  const run = (payload, questions) => {
    const parsed = typeof payload === 'number' ? { call: payload } : JSON.parse(payload)
    if (questions !== undefined) parsed.questions = questions
    const call = parsed.call
    return new Promise((resolve) => {
      const record = new Call(resolve)
      waiting.set(call, record)
      resolved.then(() => runProvider(provider, call, parsed, record, finish))
    })
  }
  return { dispatch, run }
}

/** A constructor that returns the object it is given: a subclass stamps its fields on it. */
class Stamp {
  /** @param {object} object */
  constructor(object) {
    return object
  }
}

/**
 * A request's own call, kept in a private field stamped on the request: invisible to the
 * provider (no property, no symbol, never copied by a spread) and cheaper to add than a
 * non-enumerable property (a `defineProperty`).
 */
class CallOf extends Stamp {
  /** @type {Call} */
  #call

  /**
   * @param {object} request
   * @param {Call} call
   */
  constructor(request, call) {
    super(request)
    this.#call = call
  }

  /**
   * The call stamped on `request`.
   * @param {object} request
   * @returns {Call}
   */
  static of(request) {
    return /** @type {CallOf} */ (request).#call
  }
}

/**
 * One accessor pair for every request: V8 shares the shape of objects whose accessors are the
 * same functions (a closure per request would give each its own shape, in the old generation).
 * @type {PropertyDescriptor & ThisType<Record<string | symbol, any>>}
 */
const signalProperty = {
  get() {
    return CallOf.of(this).signal
  },
  set(value) {
    Object.defineProperty(this, 'signal', { value, writable: true, enumerable: true, configurable: true })
  },
  enumerable: true,
  configurable: true,
}

/**
 * Gives `request` its `signal`: an own, enumerable property like any other, whose
 * `AbortSignal` is made when it is first read. Most providers never read it, and in Node an
 * `AbortSignal` costs more than the rest of the request: it outlives the young generation, so
 * one per ask fills the old one and brings full collections, whose cost grows with everything
 * live (100,000 agents). Assigning `request.signal` replaces it, as with a plain property.
 * @param {Record<string | symbol, unknown>} request
 * @param {Call} record
 */
function signalOf(request, record) {
  new CallOf(request, record) // stamps `record` on `request`
  Object.defineProperty(request, 'signal', signalProperty)
}

/**
 * @param {Provider} provider
 * @param {number} call
 * @param {{ questions: unknown, agentKey?: number, expiresAt?: string, key?: string, to?: string[] }} payload
 * @param {Call} record
 * @param {(call: number, record: Call, outcome: string, answer?: import('./snapshot.js').AnswerCopy) => void} finish
 */
function runProvider(provider, call, payload, record, finish) {
  // Withdrawn already: the asker has (or is about to get) its outcome, and the native side
  // forgot the call.
  if (record.withdrawn) return
  let result
  try {
    const { questions, agentKey, expiresAt, key, to } = payload
    /** @type {Record<string, unknown>} */
    const request = { questions }
    if (agentKey !== undefined) {
      const agent = agentByKey(agentKey)
      if (agent !== undefined) request.agent = agent
    }
    signalOf(request, record)
    if (expiresAt !== undefined) request.expiresAt = expiresAt
    if (key !== undefined) request.key = key
    if (to !== undefined) request.to = to
    result = provider.ask(request)
  } catch (err) {
    finish(call, record, failureOf(err))
    return
  }
  // On the fast path a plain answer goes as a copy, which the asker can then get as it is.
  // One returned as it is (no promise) is copied now, before anything else runs: the asker
  // gets what the provider answered, whatever the provider does with it afterwards.
  let thenable
  try {
    thenable = typeof result === 'object' && result !== null && 'then' in result
  } catch (err) {
    // Looking at it threw (a Proxy's `has` trap, a revoked Proxy): not an answer.
    finish(call, record, notAnAnswer(err))
    return
  }
  if (typeof result === 'object' && result !== null && !thenable) {
    const copy = copied(call, record, finish, result)
    if (copy === null) return
    if (copy !== undefined) {
      // Settled a microtask later, as `await` of the answer would.
      resolved.then(() => finish(call, record, `{"answer":${JSON.stringify(copy)}}`, copy))
      return
    }
  }
  // As `await` would: a thenable is followed, anything else is the answer.
  let followed
  try {
    followed = Promise.resolve(result)
  } catch (err) {
    // A promise whose `constructor` getter throws.
    finish(call, record, failureOf(err))
    return
  }
  followed.then(
    (answer) => {
      const copy = copied(call, record, finish, answer)
      if (copy === undefined) finish(call, record, outcomeOf(answer))
      else if (copy !== null) finish(call, record, `{"answer":${JSON.stringify(copy)}}`, copy)
    },
    (err) => finish(call, record, failureOf(err)),
  )
}

/**
 * On the fast path, the copy of a provider's `answer` when it is plain data (`undefined`:
 * none); `null` once reading it threw (a getter) and the call is finished as failed, like any
 * other provider failure.
 * @param {number} call
 * @param {Call} record
 * @param {(call: number, record: Call, outcome: string) => void} finish
 * @param {unknown} answer
 */
function copied(call, record, finish, answer) {
  try {
    return record.resolve === undefined ? undefined : answerCopy(answer)
  } catch (err) {
    finish(call, record, notAnAnswer(err))
    return null
  }
}

module.exports = { dispatcherFor }
