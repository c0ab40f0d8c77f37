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

// Every field the mapping can emit (a choice, free text, a typed input's primitive schema, §24)
// is a field the MCP SDK declares for a form's requested schema.
import type { PrimitiveSchemaDefinition } from '@modelcontextprotocol/sdk/types.js'
import type { ElicitationField } from '../../adapters/mcp'
declare const emitted: ElicitationField
const accepted: PrimitiveSchemaDefinition = emitted
const typed: ElicitationField[] = [
  { type: 'integer', title: 'Seats', description: 'How many seats?', minimum: 1, maximum: 50, default: 5 },
  { type: 'string', title: 'When', description: 'When?', format: 'date', default: '2026-03-02' },
  { type: 'boolean', title: 'Notify', description: 'Notify?', default: false },
]
void [accepted, typed]
