// `ask_user_question` as a Vercel AI SDK tool (docs/reference.md §21).
import type { Tool } from 'ai'
import type { Agent, Context, ToolResult, UserQuestionService } from '../index'

/** The name to give the tool in `tools`: `ask_user_question`. */
export declare const TOOL_NAME: 'ask_user_question'

/** The model's arguments (§9's parameters; checked by the seam, not by the SDK). */
export type AskUserQuestionArgs = {
  questions: Array<{
    id: string
    question: string
    header?: string
    options?: Array<{ label: string; description?: string; [key: string]: unknown }>
    multi_select?: boolean
    [key: string]: unknown
  }>
}

/**
 * `ask_user_question` (§9's description and parameters as `jsonSchema`) as an AI SDK `tool()`
 * that asks through the provider of `ctx` (a context or its `userQuestions`) and resolves with
 * §9's tool result. `agent`: the live root
 * agent (§5); `timeoutMs`: every ask's deadline (§16); `keyFromCallId`: the tool call id is each
 * ask's `key` (§20).
 */
export declare function askUserQuestionTool(
  ctx: Context | UserQuestionService,
  options?: { agent?: Agent; timeoutMs?: number; keyFromCallId?: boolean },
): Tool<AskUserQuestionArgs, ToolResult>
