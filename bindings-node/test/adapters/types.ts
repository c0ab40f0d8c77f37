// Compile-time checks of the adapters' public types (tsc -p adapters/tsconfig.json).
import { AskUserQuestionTool, Context } from '../..'
import { canUseTool, toRequest, toResult, type PermissionResult } from '../../adapters/claude'
import { toRequest as codexRequest, toResult as codexResult, type RequestUserInputResponse } from '../../adapters/codex'
import { McpElicitationProvider, fromElicitation, toElicitation, type Elicitation } from '../../adapters/mcp'

const ctx = new Context()
const handler = canUseTool(ctx.userQuestions, {
  fallback: async (toolName) => ({ behavior: 'deny', message: `no ${toolName}` }),
})
const decided: Promise<PermissionResult> = handler('AskUserQuestion', { questions: [] }, { signal: new AbortController().signal })
const request = toRequest({ questions: [] })
const result: Record<string, string> = toResult({}, { answers: [] }).answers
const codex: RequestUserInputResponse = codexResult(codexRequest({}), { answers: [] })
const form: Elicitation = toElicitation(request.questions)
const answer = fromElicitation(request.questions, { action: 'accept', content: {} })
declare const server: { request: Function; getClientCapabilities(): unknown }
ctx.userQuestions.registerProvider(new McpElicitationProvider(server))
void [decided, result, codex, form, answer, AskUserQuestionTool]
