// MCP form elicitation both ways and McpElicitationProvider (docs/reference.md §21).
import type { AskUserQuestionAnswer, AskUserQuestionItem, ProviderRequest, UserQuestionProvider } from '../index'
import type { Elicitation } from './types'

export type { Elicitation, ElicitationField } from './types'

/** The message of `ASK_CANCELLED` when the client declines or cancels. */
export declare const CANCELLED: string
/** The message of the `PROVIDER_FAILED` raised when the client cannot elicit. */
export declare const NO_ELICITATION: string
/** The message of the `PROVIDER_FAILED` raised when the connection to the client closes before it answers. */
export declare const CLIENT_GONE: string

/**
 * A question batch → `{ message, requestedSchema }` (one field per id, `<id>.other` for free text,
 * a typed `input`'s primitive schema, nothing required); a `secret` or `file` input is
 * `INVALID_REQUEST` naming the question (docs/reference.md §24).
 */
export declare function toElicitation(questions: AskUserQuestionItem[]): Elicitation

/**
 * `{ action, content? }` → the answer (a typed field's value as the item's `value`; checked by §6);
 * `ASK_CANCELLED` for decline/cancel; `PROVIDER_FAILED` naming the field or question.
 */
export declare function fromElicitation(questions: AskUserQuestionItem[], result: unknown): AskUserQuestionAnswer

/** Whether declared client capabilities include form-mode elicitation. */
export declare function supportsFormElicitation(capabilities: unknown): boolean

/**
 * A provider that asks the connected client of an MCP server (`Server` or `McpServer` of
 * `@modelcontextprotocol/sdk`) through form elicitation. A client without the capability fails
 * each ask with `PROVIDER_FAILED` (`NO_ELICITATION`); a withdrawn ask cancels the client's request;
 * a connection that closes first fails the ask with `PROVIDER_FAILED` (`CLIENT_GONE`), unless the
 * ask's signal is the tool call's `extra.signal` (then the ask is withdrawn: `ASK_ABORTED`). A
 * `secret` or `file` question fails the ask with `INVALID_REQUEST` and the client is not asked.
 * `relatedRequestId` (a tool call's `extra.requestId`) ties each elicitation to that request.
 */
export declare class McpElicitationProvider implements UserQuestionProvider {
  constructor(
    server: { request: Function; getClientCapabilities(): unknown } | { server: unknown },
    options?: { relatedRequestId?: string | number },
  )
  ask(request: ProviderRequest): Promise<AskUserQuestionAnswer>
}
