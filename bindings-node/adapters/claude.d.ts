// Claude Code's `AskUserQuestion` and a Claude Agent SDK `canUseTool` handler (docs/reference.md §21).
import type { AskUserQuestionAnswer, AskUserQuestionItem } from '../index'
import type {
  AskUserQuestionInput,
  AskUserQuestionResult,
  CanUseToolExtra,
  CanUseToolOptions,
  PermissionResult,
  QuestionService,
} from './types'

export type {
  AskUserQuestionInput,
  AskUserQuestionOptionInput,
  AskUserQuestionQuestionInput,
  AskUserQuestionResult,
  CanUseToolExtra,
  CanUseToolOptions,
  PermissionResult,
  PlanReview,
  QuestionService,
} from './types'

/** Claude's limit on a question's header, in characters. */
export declare const MAX_HEADER: 12

/** `AskUserQuestion` input → a request with ids `q1`, `q2`, …; `INVALID_REQUEST` naming what does not fit. */
export declare function toRequest(input: unknown): { questions: AskUserQuestionItem[] }

/** Our answer → `{ questions, answers }`: labels joined by `", "`, free text as the answer, skips left out. */
export declare function toResult(input: unknown, answer: AskUserQuestionAnswer): AskUserQuestionResult

/**
 * A `canUseTool` callback: `AskUserQuestion` asks `service` and allows with `{ questions, answers }`;
 * `ExitPlanMode` reviews `input.plan` (§17), approved allows, anything else denies with the feedback.
 */
export declare function canUseTool(
  service: QuestionService,
  options?: CanUseToolOptions,
): (toolName: string, input: Record<string, unknown>, extra: CanUseToolExtra) => Promise<PermissionResult>
