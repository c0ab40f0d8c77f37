// Types shared by the adapters' JS (JSDoc) and their public .d.ts files (docs/reference.md §21).
import type { Agent, AskUserQuestionAnswer, AskUserQuestionRequest } from '../index'

// ---- Claude Code AskUserQuestion ----

/** A plan review's result (docs/reference.md §17). */
export interface PlanReview {
  decision: 'approved' | 'revise' | 'rejected' | 'dismissed'
  feedback?: string
}

/** What the handler needs of a `ctx.userQuestions`: `ask` and `reviewPlan`. */
export interface QuestionService {
  ask(request: AskUserQuestionRequest): Promise<AskUserQuestionAnswer>
  reviewPlan(plan: string, options?: { agent?: Agent; signal?: AbortSignal }): Promise<PlanReview>
}

/** One option of an `AskUserQuestion` question; `preview` becomes the option's `preview` (docs/reference.md §24). */
export interface AskUserQuestionOptionInput {
  label: string
  description?: string
  preview?: string
}

/** One question of `AskUserQuestion`'s input: 2–4 options, a header of at most 12 characters. */
export interface AskUserQuestionQuestionInput {
  question: string
  header?: string
  options: AskUserQuestionOptionInput[]
  multiSelect?: boolean
}

/** `AskUserQuestion`'s tool input: 1–4 questions with distinct texts. */
export interface AskUserQuestionInput {
  questions: AskUserQuestionQuestionInput[]
  [key: string]: unknown
}

/** `AskUserQuestion`'s result: the questions, and the answers keyed by question text. */
export interface AskUserQuestionResult {
  questions: AskUserQuestionQuestionInput[]
  answers: Record<string, string>
}

/** The SDK's `PermissionResult` (the part this handler returns). */
export type PermissionResult =
  | { behavior: 'allow'; updatedInput?: Record<string, unknown>; [key: string]: unknown }
  | { behavior: 'deny'; message: string; interrupt?: boolean; [key: string]: unknown }

/** What the SDK passes as `canUseTool`'s third argument (the part this handler reads). */
export interface CanUseToolExtra {
  signal: AbortSignal
  [key: string]: unknown
}

export interface CanUseToolOptions {
  /** The calling agent, passed to every ask (it must be the exact live runtime root). */
  agent?: Agent
  /** Decides every tool other than `AskUserQuestion` and `ExitPlanMode`; without it they are denied. */
  fallback?: (toolName: string, input: Record<string, unknown>, extra: CanUseToolExtra) => Promise<PermissionResult>
}

// ---- Codex request_user_input ----

/**
 * One question of `request_user_input`: no multi-select; `isSecret: true` (without options) is
 * a question with a `secret` input (docs/reference.md §24).
 */
export interface RequestUserInputQuestion {
  id: string
  header?: string
  question: string
  isOther?: boolean
  isSecret?: boolean
  options?: { label: string; description?: string }[] | null
}

/** `request_user_input`'s arguments (or the app server's `item/tool/requestUserInput` params): 1–3 questions. */
export interface RequestUserInputArgs {
  questions: RequestUserInputQuestion[]
  [key: string]: unknown
}

/** Codex's response: per id, the chosen label and free text as `"user_note: …"`. */
export interface RequestUserInputResponse {
  answers: Record<string, { answers: string[] }>
}

// ---- MCP elicitation ----

/**
 * A field of the requested schema: a choice (single- or multi-select), free text, or the
 * primitive schema of a typed input (docs/reference.md §24: text, date, datetime, email and
 * url are strings, with `format` for the last four; number and integer carry their bounds;
 * boolean). Every one is a `PrimitiveSchemaDefinition` of `@modelcontextprotocol/sdk`.
 */
export type ElicitationField =
  | { type: 'string'; title: string; description: string; oneOf: { const: string; title: string }[] }
  | { type: 'array'; title: string; description: string; items: { anyOf: { const: string; title: string }[] } }
  | {
      type: 'string'
      title: string
      description: string
      format?: 'date' | 'date-time' | 'email' | 'uri'
      minLength?: number
      maxLength?: number
      default?: string
    }
  | { type: 'number' | 'integer'; title: string; description: string; minimum?: number; maximum?: number; default?: number }
  | { type: 'boolean'; title: string; description: string; default?: boolean }

/** The parameters of a form-mode `elicitation/create` request. */
export interface Elicitation {
  message: string
  requestedSchema: { type: 'object'; properties: Record<string, ElicitationField> }
}
