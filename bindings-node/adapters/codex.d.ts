// Codex's `request_user_input` (docs/reference.md §21).
import type { AskUserQuestionAnswer, AskUserQuestionItem } from '../index'
import type { RequestUserInputResponse } from './types'

export type { RequestUserInputArgs, RequestUserInputQuestion, RequestUserInputResponse } from './types'

/** How Codex's own UI sends free text. */
export declare const NOTE_PREFIX: 'user_note: '

/** `request_user_input` arguments → a request (ids kept); `INVALID_REQUEST` naming what does not fit. */
export declare function toRequest(input: unknown): { questions: AskUserQuestionItem[] }

/** Our answer → Codex's response; checked by §6 first (`BAD_ANSWER`). */
export declare function toResult(input: unknown, answer: AskUserQuestionAnswer): RequestUserInputResponse
