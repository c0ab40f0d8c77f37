// `ask_user_question` as an OpenAI Agents SDK function tool (docs/reference.md §21).
import type { FunctionTool } from '@openai/agents'
import type { Agent, Context, ToolResult, UserQuestionService } from '../index'

/** §9's tool result as the compact JSON text the model reads. */
export declare function resultText(result: ToolResult): string

/**
 * `ask_user_question` (§9's name, description and parameters; not strict) as an `@openai/agents`
 * function tool that asks through the provider of `ctx` (a context or its `userQuestions`) and
 * returns §9's result as JSON text.
 * `agent`: the live root agent (§5); `timeoutMs`: every ask's deadline (§16); `keyFromCallId`:
 * the model's call id is each ask's `key` (§20).
 */
export declare function askUserQuestionTool(
  ctx: Context | UserQuestionService,
  options?: { agent?: Agent; timeoutMs?: number; keyFromCallId?: boolean },
): FunctionTool<unknown, any, string>
