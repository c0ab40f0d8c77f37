// @ts-check
// The Vercel AI SDK (§21): `ask_user_question` (§9) as a `tool()` of the `ai` package.
//
// `askUserQuestionTool(ctx, options)` → `tool({ description, inputSchema: jsonSchema(§9's
// parameters), execute })`, to be put under the name `ask_user_question` in `tools`. `execute`
// runs the seam's tool on the context — the registered provider asks the person — and resolves
// with §9's tool result object (`{ isError, value, content }` or the failure form), which the
// SDK sends to the model as JSON. Seam errors are results, never throws; the SDK's abort
// signal for the call withdraws the ask. The SDK does not check the arguments against the
// schema (a JSON Schema without a validator): the seam's checks do (§3, INVALID_REQUEST).
'use strict'

const { jsonSchema, tool } = require('ai')

const { toolFor } = require('../lib/tool.js')

/**
 * @typedef {import('../index').Context} Context
 * @typedef {import('../index').UserQuestionService} UserQuestionService
 * @typedef {import('../index').Agent} Agent
 * @typedef {import('../index').ToolResult} ToolResult
 */

/** The name to give the tool in `tools`: `ask_user_question`. */
const TOOL_NAME = 'ask_user_question'

/**
 * `ask_user_question` as an AI SDK tool asking through `ctx`'s provider. `agent`: the live root
 * agent the asks are made for (§5); `timeoutMs`: every ask's deadline (§16); `keyFromCallId`:
 * each ask's `key` (§20) is the model's tool call id (only for models whose ids are unique).
 * @param {Context | UserQuestionService} ctx
 * @param {{ agent?: Agent, timeoutMs?: number, keyFromCallId?: boolean }} [options]
 */
function askUserQuestionTool(ctx, options = {}) {
  const seam = toolFor(ctx, 'askUserQuestionTool')
  const { description, parameters } = seam.definition
  return tool({
    description,
    inputSchema: jsonSchema(/** @type {any} */ (parameters)),
    /**
     * @param {unknown} args
     * @param {{ toolCallId?: string, abortSignal?: AbortSignal }} call
     * @returns {Promise<ToolResult>}
     */
    async execute(args, call) {
      /** @type {{ agent?: Agent, signal?: AbortSignal, timeoutMs?: number, key?: string }} */
      const exec = {}
      if (options.agent !== undefined) exec.agent = options.agent
      if (call?.abortSignal !== undefined) exec.signal = call.abortSignal
      if (options.timeoutMs !== undefined) exec.timeoutMs = options.timeoutMs
      const callId = call?.toolCallId
      if (options.keyFromCallId && typeof callId === 'string' && callId !== '') exec.key = callId
      return seam.execute(args, exec)
    },
  })
}

module.exports = { TOOL_NAME, askUserQuestionTool }
