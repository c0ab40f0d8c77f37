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

/**
 * @typedef {{ ask(request: Record<string, unknown>): unknown }} Provider
 */

/**
 * The dispatcher the native side calls for a JS provider, on this JS thread, while the ask
 * starts: `(call, payload)` runs the provider's `ask` in a microtask (never inside the asker's
 * call) and resolves with its outcome (it never rejects: sync throws, rejections and odd
 * values all become outcomes); `(call, null)` withdraws ask `call`, aborting its
 * `request.signal` synchronously (its listeners run before the asker can resume, §4.7). An ask
 * withdrawn before its microtask ran never reaches the provider.
 * @param {Provider} provider
 * @returns {(call: number, payload: string | null) => Promise<string>}
 */
function dispatcherFor(provider) {
  /** @type {Map<number, AbortController>} */
  const waiting = new Map()
  /**
   * The outcome Promises not yet settled, held so that a provider Promise that is never
   * settled (and collected) leaves its ask waiting rather than failing it.
   * @type {Set<Promise<string>>}
   */
  const running = new Set()
  return (call, payload) => {
    if (payload == null) {
      const controller = waiting.get(call)
      if (controller !== undefined) {
        waiting.delete(call)
        controller.abort()
      }
      return Promise.resolve('')
    }
    const controller = new AbortController()
    waiting.set(call, controller)
    const outcome = Promise.resolve().then(() => runProvider(provider, call, payload, controller, waiting))
    running.add(outcome)
    outcome.then(() => running.delete(outcome))
    return outcome
  }
}

/**
 * @param {Provider} provider
 * @param {number} call
 * @param {string} payload
 * @param {AbortController} controller
 * @param {Map<number, AbortController>} waiting
 * @returns {Promise<string>}
 */
async function runProvider(provider, call, payload, controller, waiting) {
  // Withdrawn already: the asker has its outcome; this one is never read.
  if (controller.signal.aborted) return failureOf(new Error('withdrawn'))
  try {
    const { questions, agentKey, expiresAt, key } = JSON.parse(payload)
    /** @type {Record<string, unknown>} */
    const request = { questions }
    if (agentKey !== undefined) {
      const agent = agentByKey(agentKey)
      if (agent !== undefined) request.agent = agent
    }
    request.signal = controller.signal
    if (expiresAt !== undefined) request.expiresAt = expiresAt
    if (key !== undefined) request.key = key
    return outcomeOf(await provider.ask(request))
  } catch (err) {
    return failureOf(err)
  } finally {
    waiting.delete(call)
  }
}

module.exports = { dispatcherFor }
