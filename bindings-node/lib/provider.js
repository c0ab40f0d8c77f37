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
 * The dispatcher the native side calls for a JS provider: `[call, payload]` runs an ask and
 * resolves with its outcome (it never rejects: sync throws, rejections and odd values all
 * become outcomes); `[call]` alone withdraws ask `call`, aborting its `request.signal`.
 * @param {Provider} provider
 * @returns {(args: [number, (string | null | undefined)?]) => Promise<string>}
 */
function dispatcherFor(provider) {
  /** @type {Map<number, AbortController>} */
  const waiting = new Map()
  return ([call, payload]) => {
    if (payload == null) {
      const controller = waiting.get(call)
      if (controller !== undefined) {
        waiting.delete(call)
        controller.abort()
      }
      return Promise.resolve('')
    }
    return runProvider(provider, call, payload, waiting)
  }
}

/**
 * @param {Provider} provider
 * @param {number} call
 * @param {string} payload
 * @param {Map<number, AbortController>} waiting
 * @returns {Promise<string>}
 */
async function runProvider(provider, call, payload, waiting) {
  const controller = new AbortController()
  waiting.set(call, controller)
  try {
    const { questions, agentKey } = JSON.parse(payload)
    /** @type {Record<string, unknown>} */
    const request = { questions }
    if (agentKey !== undefined) {
      const agent = agentByKey(agentKey)
      if (agent !== undefined) request.agent = agent
    }
    request.signal = controller.signal
    return outcomeOf(await provider.ask(request))
  } catch (err) {
    return failureOf(err)
  } finally {
    waiting.delete(call)
  }
}

module.exports = { dispatcherFor }
