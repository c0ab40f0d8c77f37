// @ts-check
// The OpenAI Agents SDK (§21): `ask_user_question` (§9) as a function tool of `@openai/agents`.
//
// `askUserQuestionTool(ctx, options)` → `tool({ name, description, parameters, strict: false,
// execute })` with §9's name, description and parameter schema (not strict: the questions and
// options are open objects with optional fields, which strict mode cannot express). The SDK
// calls it with the model's parsed arguments; it runs the seam's tool on the context — the
// registered provider asks the person — and returns §9's tool result as compact JSON text,
// which the model reads. Seam errors are results, never throws. Arguments that are not JSON
// never reach it: the SDK answers the model with its own parse-error message. The SDK's abort
// signal for the call (a cancelled run, a tool timeout) withdraws the ask.
'use strict'

const { tool } = require('@openai/agents')

const { toolFor } = require('../lib/tool.js')

/**
 * @typedef {import('../index').Context} Context
 * @typedef {import('../index').UserQuestionService} UserQuestionService
 * @typedef {import('../index').Agent} Agent
 * @typedef {import('../index').ToolResult} ToolResult
 */

/**
 * §9's tool result as the compact JSON text the model reads.
 * @param {ToolResult} result
 */
function resultText(result) {
  return JSON.stringify(result)
}

/**
 * `ask_user_question` as an `@openai/agents` function tool asking through `ctx`'s provider.
 * `agent`: the live root agent the asks are made for (§5); `timeoutMs`: every ask's deadline
 * (§16); `keyFromCallId`: each ask's `key` (§20) is the model's call id, so a hub resumes the
 * same question when a run is retried with the same call (only for models whose call ids are
 * unique).
 * @param {Context | UserQuestionService} ctx
 * @param {{ agent?: Agent, timeoutMs?: number, keyFromCallId?: boolean }} [options]
 */
function askUserQuestionTool(ctx, options = {}) {
  const seam = toolFor(ctx, 'askUserQuestionTool')
  const { name, description, parameters } = seam.definition
  return tool({
    name,
    description,
    parameters: /** @type {any} */ (parameters),
    strict: false,
    /**
     * @param {unknown} args
     * @param {unknown} _runContext
     * @param {{ toolCall?: { callId?: string }, signal?: AbortSignal }} [details]
     */
    async execute(args, _runContext, details) {
      /** @type {{ agent?: Agent, signal?: AbortSignal, timeoutMs?: number, key?: string }} */
      const exec = {}
      if (options.agent !== undefined) exec.agent = options.agent
      if (details?.signal !== undefined) exec.signal = details.signal
      if (options.timeoutMs !== undefined) exec.timeoutMs = options.timeoutMs
      const callId = details?.toolCall?.callId
      if (options.keyFromCallId && typeof callId === 'string' && callId !== '') exec.key = callId
      return resultText(await seam.execute(args, exec))
    },
  })
}

module.exports = { askUserQuestionTool, resultText }
