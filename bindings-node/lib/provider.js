// @ts-check
// JS providers (§3, §4): wrapped so that nothing they do can crash the process.
'use strict'

const { agentByKey } = require('./agents.js')
const { describe, isUserQuestionError } = require('./errors.js')

/**
 * The outcome JSON of one provider call; never throws.
 * @param {unknown} answer
 * @returns {string}
 */
function outcomeOf(answer) {
  try {
    return JSON.stringify({ answer })
  } catch (err) {
    return JSON.stringify({
      error: {
        code: 'PROVIDER_FAILED',
        message: `the user-questions provider answered with something that is not an answer: ${describe(err)}`,
      },
    })
  }
}

/**
 * @param {unknown} err
 * @returns {string}
 */
function failureOf(err) {
  if (isUserQuestionError(err)) {
    return JSON.stringify({ error: { code: err.code, message: err.message } })
  }
  return JSON.stringify({ error: { code: 'PROVIDER_FAILED', message: describe(err) } })
}

/** A settled Promise: its `then` runs a function in a microtask (`queueMicrotask` costs more). */
const resolved = Promise.resolve()

/**
 * @typedef {{ ask(request: Record<string, unknown>): unknown }} Provider
 */

/**
 * The dispatcher the native side calls for a JS provider, on this JS thread, while the ask
 * starts: `(call, payload)` runs the provider's `ask` in a microtask (never inside the asker's
 * call) and settles the call with its outcome through `calls.settle` — one native call, which
 * settles the ask (sync throws, rejections and odd values all become outcomes); `(call, null)`
 * withdraws ask `call`, aborting its `request.signal` synchronously (its listeners run before
 * the asker can resume, §4.7). An ask withdrawn before its microtask ran never reaches the
 * provider. A provider Promise that never settles leaves its ask waiting (the native side
 * holds the call, not the Promise).
 * @param {Provider} provider
 * @param {import('../native.js').NativeProviderCalls} calls
 * @returns {(call: number, payload: string | null) => void}
 */
function dispatcherFor(provider, calls) {
  /** @type {Map<number, AbortController>} */
  const waiting = new Map()
  /**
   * @param {number} call
   * @param {string} outcome
   */
  const finish = (call, outcome) => {
    waiting.delete(call)
    try {
      calls.settle(call, outcome)
    } catch (err) {
      // Only a panic caught at the addon's boundary can land here; it must not become an
      // unhandled rejection.
      process.emitWarning(`settling a provider call failed: ${describe(err)}`, { code: 'USER_QUESTIONS_INTERNAL' })
    }
  }
  return (call, payload) => {
    if (payload == null) {
      const controller = waiting.get(call)
      if (controller !== undefined) {
        waiting.delete(call)
        controller.abort()
      }
      return
    }
    const controller = new AbortController()
    waiting.set(call, controller)
    resolved.then(() => runProvider(provider, call, payload, controller, waiting, finish))
  }
}

/** The request's own controller (not enumerable, so never copied by a spread). */
const kController = Symbol('controller')

/**
 * One accessor pair for every request: V8 shares the shape of objects whose accessors are the
 * same functions (a closure per request would give each its own shape, in the old generation).
 * @type {PropertyDescriptor & ThisType<Record<string | symbol, any>>}
 */
const signalProperty = {
  get() {
    return this[kController].signal
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
 * @param {Record<string, unknown>} request
 * @param {AbortController} controller
 */
function signalOf(request, controller) {
  Object.defineProperty(request, kController, { value: controller })
  Object.defineProperty(request, 'signal', signalProperty)
}

/**
 * @param {Provider} provider
 * @param {number} call
 * @param {string} payload
 * @param {AbortController} controller
 * @param {Map<number, AbortController>} waiting
 * @param {(call: number, outcome: string) => void} finish
 */
function runProvider(provider, call, payload, controller, waiting, finish) {
  // Withdrawn already (a withdrawal takes the call out of `waiting`): the asker has its
  // outcome and the native side forgot the call.
  if (waiting.get(call) !== controller) return
  let result
  try {
    const { questions, agentKey, expiresAt, key } = JSON.parse(payload)
    /** @type {Record<string, unknown>} */
    const request = { questions }
    if (agentKey !== undefined) {
      const agent = agentByKey(agentKey)
      if (agent !== undefined) request.agent = agent
    }
    signalOf(request, controller)
    if (expiresAt !== undefined) request.expiresAt = expiresAt
    if (key !== undefined) request.key = key
    result = provider.ask(request)
  } catch (err) {
    finish(call, failureOf(err))
    return
  }
  // As `await` would: a thenable is followed, anything else is the answer.
  Promise.resolve(result).then(
    (answer) => finish(call, outcomeOf(answer)),
    (err) => finish(call, failureOf(err)),
  )
}

module.exports = { dispatcherFor }
