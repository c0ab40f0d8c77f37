// Types of the npm package `user-questions` (docs/reference.md §11, Node column). Hand-written for the
// JS layer in index.js; test/types.test.js checks them against the runtime exports and the
// wire types of docs/reference.md §2, and `tsc --noEmit` checks the TypeScript examples against them.

// ---- Wire types (docs/reference.md §2). Optional fields are omitted when absent, never null. ----------

/** One choice offered to the user. */
export interface AskUserQuestionOption {
  label: string
  description?: string
  /** Shown as preformatted text when the option is focused (§24); a unified diff is coloured. */
  preview?: string
}

/** The kinds of typed value a question may ask for (§24). */
export type AskUserQuestionInputKind =
  | 'text'
  | 'number'
  | 'integer'
  | 'boolean'
  | 'date'
  | 'datetime'
  | 'email'
  | 'url'
  | 'secret'
  | 'file'

/** A typed value asked for instead of options (§24); each constraint belongs to some kinds. */
export interface AskUserQuestionInput {
  kind: AskUserQuestionInputKind
  /** text, secret: lengths in characters. */
  minLength?: number
  maxLength?: number
  /** text, secret: several lines. */
  multiline?: boolean
  /** number, integer: numbers; date, datetime: ISO strings. */
  minimum?: number | string
  maximum?: number | string
  /** file: media types (`image/*` admits every image type). */
  accept?: string[]
  /** file: at most this many bytes (≤ 4 MiB; default 1 MiB). */
  maxBytes?: number
  /** A value that fits; not for secret or file. */
  default?: string | number | boolean
}

/** A file given as an answer's value (§24): `data` is standard, padded base64. */
export interface FileValue {
  name: string
  mediaType: string
  size: number
  /** Lowercase hex SHA-256 of the decoded bytes. */
  sha256: string
  data: string
}

/** A presentation intent; the known kind is `"plan-review"`. */
export interface AskUserQuestionIntent {
  kind: 'plan-review' | (string & {})
  approve: string
}

/** One question of a batch. */
export interface AskUserQuestionItem {
  id: string
  question: string
  /** Supporting text rendered with the question; for a plan review, the plan (markdown). */
  detail?: string
  header?: string
  /** Recommended option first, with ` (Recommended)` appended to its label. */
  options?: AskUserQuestionOption[]
  multiSelect?: boolean
  intent?: AskUserQuestionIntent
  /** A typed value instead of options (§24). */
  input?: AskUserQuestionInput
}

/** The answer to one question; a skipped question is `{ id, selected: [] }`. */
export interface AskUserQuestionAnswerItem {
  id: string
  selected: string[]
  custom?: string
  /** The typed value of a question with `input` (§24); a file's is a `FileValue`. */
  value?: string | number | boolean | FileValue
}

/** Who answered (§23): the person a server knew. `name` is the id when none was given. */
export interface Respondent {
  id: string
  name: string
}

/** The answer to a batch: one item per question, in order. */
export interface AskUserQuestionAnswer {
  answers: AskUserQuestionAnswerItem[]
  /**
   * Who answered, when the server that took the answer knew the person (§23). Answer checking
   * ignores it; the model-facing tool result never carries it.
   */
  respondent?: Respondent
}

// ---- Errors (docs/reference.md §10) -------------------------------------------------------------------

/** docs/reference.md §10: every code and its number (the C ABI's). */
export declare const CODES: Readonly<{
  OK: 0
  ASK_ABORTED: 1
  EMPTY_QUESTIONS: 2
  CALLER_NOT_LIVE: 3
  DELEGATED_CALLER: 4
  BAD_INTENT: 5
  NO_PROVIDER: 6
  DUPLICATE_PROVIDER: 7
  ASK_CANCELLED: 8
  INVALID_REQUEST: 9
  BAD_ANSWER: 10
  PROVIDER_FAILED: 11
  NOT_PENDING: 12
  ALREADY_RESOLVED: 13
  AGENT_EXISTS: 14
  INVALID_ARGUMENT: 15
  INTERNAL: 16
  ASK_TIMED_OUT: 17
}>

/** A code name of docs/reference.md §10. */
export type UserQuestionErrorCode = keyof typeof CODES

/** The one error class: `.name === 'UserQuestionError'`, `.code`, exact `.message`. */
export declare class UserQuestionError extends Error {
  constructor(message: string, code: UserQuestionErrorCode)
  readonly name: 'UserQuestionError'
  code: UserQuestionErrorCode
}

// ---- Agents (docs/reference.md §5) ----------------------------------------------------------------------

/** An agent instance. Identity is the instance: two agents with one id are different agents. */
export declare class Agent {
  /** `delegationDepth`: durable lineage, informational only (default 0). */
  constructor(id: string, options?: { delegationDepth?: number })
  readonly id: string
  readonly delegationDepth: number
  /** `{id, delegationDepth}`, for logs; the identity is the instance, not this data. */
  toJSON(): { id: string; delegationDepth: number }
}

/** A function that undoes something once; calling it again does nothing. Also `using`-able. */
export interface Disposer {
  (): void
  [Symbol.dispose](): void
}

/** The live agents of one context. */
export declare class AgentRegistry {
  private constructor()
  /**
   * Registers the exact instance `agent`; `owner` is the live agent whose runtime created it
   * (absent for a runtime root). Throws `AGENT_EXISTS` when its id is live. Returns the
   * detach function (idempotent; scoped to this registration: a stale one never removes a
   * later agent that reuses the id, nor this same instance entered again).
   */
  enter(agent: Agent, owner?: Agent | null): Disposer
  /** The live agent registered under `id`. */
  get(id: string): Agent | undefined
  /** Live agents entered without an owner, in entry order. */
  roots(): Agent[]
  /** All live agents, in entry order. */
  list(): Agent[]
}

// ---- Asking and providers (docs/reference.md §3, §4) ------------------------------------------------

/** What an asker passes to `ask`. */
export interface AskUserQuestionRequest {
  questions: AskUserQuestionItem[]
  /** The calling agent; when present it must be the exact live runtime root. */
  agent?: Agent
  /** Withdraws the ask when aborted (`ASK_ABORTED`). */
  signal?: AbortSignal
  /**
   * A deadline in milliseconds (an integer from 1 to 2147483647), counted from when the
   * provider is reached: the ask then settles `ASK_TIMED_OUT`, never with an answer.
   */
  timeoutMs?: number
  /** A resumable key (a non-empty string of at most 256 characters), e.g. the tool call's id. */
  key?: string
  /** Who is to answer (§23): 1 to 32 person ids or group names of 1 to 64 characters. */
  to?: string[]
}

/** What a provider's `ask` receives. */
export interface ProviderRequest {
  /** The validated questions (unknown fields dropped). */
  questions: AskUserQuestionItem[]
  /** The very `Agent` object the asker passed, when one was. */
  agent?: Agent
  /**
   * Aborts when the ask is withdrawn: the caller's abort, provider or context disposal, its
   * deadline. Its listeners run before the asker's `await` resumes.
   */
  signal: AbortSignal
  /** When the ask's deadline passes (RFC 3339 UTC with milliseconds), if it has one. */
  expiresAt?: string
  /** The ask's resumable key, if it has one. */
  key?: string
  /** Who is to answer (§23), if the request says. */
  to?: string[]
}

/**
 * A UI (or anything else) that shows questions and returns the answer. A thrown or rejected
 * `UserQuestionError` keeps its code; anything else settles the ask `PROVIDER_FAILED`.
 */
export interface UserQuestionProvider {
  ask(request: ProviderRequest): AskUserQuestionAnswer | PromiseLike<AskUserQuestionAnswer>
}

/** The `userQuestions` service of one context. */
export declare class UserQuestionService {
  private constructor()
  /** Strict answer checking (docs/reference.md §6 on every provider answer); off by default. */
  strict: boolean
  /** Whether a provider is registered. */
  readonly hasProvider: boolean
  /** Asks the registered provider and waits; rejects with a `UserQuestionError`. */
  ask(request: AskUserQuestionRequest): Promise<AskUserQuestionAnswer>
  /**
   * Asks the user to review a plan (markdown) through `ask()`, with all its checks; an empty
   * plan is `INVALID_REQUEST`. Rejects with a `UserQuestionError`.
   */
  reviewPlan(plan: string, options?: ReviewPlanOptions): Promise<PlanReview>
  /**
   * Registers the one provider of this context; throws `DUPLICATE_PROVIDER` while another is
   * registered. The disposer settles the asks still waiting on it `ASK_ABORTED`.
   */
  registerProvider(provider: UserQuestionProvider): Disposer
  /** A `QuestionInbox` is served natively: its asks become pending questions. */
  registerProvider(provider: QuestionInbox): Disposer
  /** A `TerminalProvider` is served natively: its asks never run JS. */
  registerProvider(provider: TerminalProvider): Disposer
  /** A `WebProvider` is served natively: its asks never run JS. */
  registerProvider(provider: WebProvider): Disposer
  /** A `RemoteProvider` is served natively: its asks never run JS. */
  registerProvider(provider: RemoteProvider): Disposer
}

/** What `reviewPlan` takes besides the plan. */
export interface ReviewPlanOptions {
  agent?: Agent
  signal?: AbortSignal
  /** A deadline in milliseconds, as for `ask`. */
  timeoutMs?: number
  /** The question shown with the plan; default `Approve this plan?`. */
  question?: string
}

/** The user's review of a plan. */
export interface PlanReview {
  decision: 'approved' | 'revise' | 'rejected' | 'dismissed'
  /** What the user wrote, when they asked for a revision in their own words. */
  feedback?: string
}

/** One context: an agent registry and the `userQuestions` service that checks against it. */
export declare class Context {
  /**
   * `journal`: a file every ask is appended to as JSON lines (`null` or absent: none). A
   * journal that cannot be written never fails or delays an ask; its first write error is
   * reported once, as a process warning (`USER_QUESTIONS_JOURNAL`).
   */
  constructor(options?: { strict?: boolean; journal?: string | null })
  readonly agents: AgentRegistry
  readonly userQuestions: UserQuestionService
  /** Disposes the provider: waiting asks settle `ASK_ABORTED`; later asks fail `NO_PROVIDER`. */
  dispose(): void
  [Symbol.dispose](): void
}

// ---- Ready-made providers (docs/reference.md §7, §8) ------------------------------------------------

/** A question waiting in an inbox. */
export interface PendingQuestion {
  ticket: number
  questions: AskUserQuestionItem[]
  agentId?: string
  /** When it was asked (RFC 3339 UTC with milliseconds). */
  askedAt: string
  /** When its deadline passes, if it has one. */
  expiresAt?: string
  /** The ask's resumable key, if it has one. */
  key?: string
  /** Who is to answer (§23), if the request says. */
  to?: string[]
}

/** How a pending question ended. */
export type InboxOutcome = 'answered' | 'cancelled' | 'aborted' | 'failed' | 'timed_out'

/** What inbox subscribers are told, in order. */
export type InboxEvent =
  | ({ type: 'requested' } & PendingQuestion)
  | { type: 'resolved'; ticket: number; outcome: InboxOutcome; by?: Respondent }
  | { type: 'extended'; ticket: number; expiresAt: string }

/** Pending questions for UIs that answer later; register it as the provider. */
export declare class QuestionInbox {
  constructor()
  /** The pending questions in arrival order. */
  pending(): PendingQuestion[]
  /** Throws `BAD_ANSWER` (it stays pending), `ALREADY_RESOLVED` or `NOT_PENDING`. */
  answer(ticket: number, answer: AskUserQuestionAnswer): void
  /** The asker gets `ASK_CANCELLED`; `by`, when given, is who cancelled (the `resolved` event's `by`). */
  cancel(ticket: number, by?: Respondent): void
  /** The asker gets `PROVIDER_FAILED` with `message`. */
  fail(ticket: number, message: string): void
  /**
   * More time: the deadline becomes `max(deadline, now + ms)`; returns the new `expiresAt`, or
   * `undefined` when the question has no deadline. `ms` outside 1..2147483647 is
   * `INVALID_ARGUMENT`; `NOT_PENDING` / `ALREADY_RESOLVED` as for `answer`.
   */
  extend(ticket: number, ms: number): string | undefined
  /**
   * Calls `listener` with every later event, in order, on this thread: an event caused here
   * before the call that caused it returns, and `resolved` before the ticket's asker resumes.
   * Returns the unsubscriber.
   */
  subscribe(listener: (event: InboxEvent) => void): Disposer
}

/** How an `AutoResponder` picks. */
export type AutoPolicy = 'first' | 'recommended' | 'skip'

/** Answers at once by a policy; never approves an intent question unless `approveIntents`. */
export declare class AutoResponder implements UserQuestionProvider {
  constructor(policy?: AutoPolicy, options?: { approveIntents?: boolean })
  readonly policy: AutoPolicy
  readonly approveIntents: boolean
  ask(request: { questions: AskUserQuestionItem[] }): AskUserQuestionAnswer
}

/**
 * The terminal question UI (docs/reference.md §8): the interactive screen when stdin and stderr are
 * terminals (and `TERM` is not `dumb`), else numbered line prompts on stderr answered from
 * stdin — decided when it is constructed. Served natively: its asks never run JS.
 */
export declare class TerminalProvider {
  #private
  constructor()
  /** Whether it draws the interactive screen (else it asks through line prompts). */
  readonly interactive: boolean
}

/**
 * A question page and JSON API over HTTP (docs/reference.md §19), bound and serving once
 * constructed, on threads of its own: its asks never run JS, and with nothing pending it never
 * keeps Node alive. Register it as the provider and open `url`. `close()` (or `using`) stops it
 * and settles what waits on it `ASK_ABORTED`, as disposing its registration does.
 * Throws `INVALID_ARGUMENT` for an address that cannot be bound, a token not of 1 to 256
 * characters from `A-Z a-z 0-9 - . _ ~`, an access file that cannot be read or does not pass
 * (`cannot read the access file PATH: <reason>`), or `token` and `access` together (`give token
 * or access, not both`).
 */
export declare class WebProvider {
  #private
  constructor(options?: {
    /** `HOST:PORT`; default `127.0.0.1:0` (a free loopback port). */
    listen?: string
    /** The token to require; default 32 random bytes, base64url. */
    token?: string
    /**
     * The access file (a path or a `file:` URL; docs/reference.md §23) of people with tokens of
     * their own, instead of the one token: each signs in with theirs (`GET /?token=…` or
     * `Authorization: Bearer …`), sees only the questions addressed to them (`to`), and the
     * answer carries their `respondent`. Read once, here.
     */
    access?: string | URL
  })
  /**
   * `http://HOST:PORT/?token=TOKEN`: open it to answer; `http://HOST:PORT/` with `access`, where
   * each person signs in with their own token.
   */
  readonly url: string
  /**
   * The token the page and API require (`Authorization: Bearer TOKEN`). With `access`, a random
   * token the server does not accept: people use their own.
   */
  readonly token: string
  /** The host the server is bound to. */
  readonly host: string
  /** The port the server is bound to. */
  readonly port: number
  /** Whether `close()` was called. */
  readonly closed: boolean
  /**
   * Stops the server: what waits on it settles `ASK_ABORTED`, the port is released and the
   * server's thread has ended when this returns. Idempotent.
   */
  close(): void
  [Symbol.dispose](): void
}

/**
 * A provider that asks through a hub (`uq serve`, docs/reference.md §20): each ask is posted to
 * the hub and settled from its outcome (`answered`, `cancelled` → `ASK_CANCELLED`, `timed_out` →
 * `ASK_TIMED_OUT`, `withdrawn` → `ASK_ABORTED`, `failed` → `PROVIDER_FAILED`); a hub that cannot
 * be reached fails `PROVIDER_FAILED` naming it, never past the ask's deadline. Throws
 * `INVALID_ARGUMENT` for a URL that is not `http://` or `https://`, or a missing token.
 */
export declare class RemoteProvider {
  #private
  constructor(options: {
    /** The hub: `http://HOST:PORT`, or the `open` URL it prints (its token serves then). */
    url: string
    /** The hub's token (`Authorization: Bearer`). */
    token?: string
  })
  /** The hub's address (`http://HOST:PORT`). */
  readonly url: string
}

// ---- The page inside the host's own web app (docs/reference.md §25) ---------------------------

/** The person the host's sign-in returned: who answered (§23), whom `to` is checked against. */
export interface MountedPerson {
  /** The person's id. */
  id: string
  /** Shown on the page and recorded with each answer; default: `id`. */
  name?: string
  /** The groups the person is in: questions addressed to one reach them. */
  groups?: string[]
}

/** The host's own sign-in: the person making `request`, or `null` (401). */
export type Authenticate = (
  request: Request,
) => MountedPerson | null | undefined | Promise<MountedPerson | null | undefined>

/** Options of {@link createFetchHandler}. */
export interface FetchHandlerOptions {
  /** The host's sign-in; without it, `token` logs in as in §19. */
  authenticate?: Authenticate | null
  /** The one token (`GET <basePath>/?token=…`, or `Authorization: Bearer`); default: random. */
  token?: string | null
  /** Where the handler is mounted (`/questions`); default: the root. */
  basePath?: string
}

/** A Fetch API handler of the page and person API, with the mount's token and `close()`. */
export interface FetchHandler {
  (request: Request): Promise<Response>
  /** The one token; `null` with `authenticate`. */
  readonly token: string | null
  /** Whether `close()` was called. */
  readonly closed: boolean
  /** Stops serving: open event streams end, later requests get 503. */
  close(): void
}

/**
 * The page and person API of `inbox` (§19) as a Fetch API handler (docs/reference.md §25), for
 * Hono, Next.js route handlers or any Fetch server, under `basePath`, behind `authenticate`. The
 * event stream is a `ReadableStream`; the request's `AbortSignal` ends it. Throws
 * `INVALID_ARGUMENT` for `authenticate` and `token` together, or a token not of 1 to 256
 * characters from `A-Z a-z 0-9 - . _ ~`.
 */
export declare function createFetchHandler(
  inbox: QuestionInbox,
  options?: FetchHandlerOptions,
): FetchHandler

/**
 * A Fetch handler as a listener for `node:http` and Express (`app.use('/questions',
 * toNodeHandler(handler))`, the handler's `basePath` the same; before any body parser). The client
 * going away ends the event stream.
 */
export declare function toNodeHandler(
  handler: (request: Request) => Promise<Response>,
): (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => Promise<void>

// ---- The tool (docs/reference.md §9) and answer checking (docs/reference.md §6) ----------------------------------

/** A JSON Schema object (the tool's parameters). */
export type JsonSchema = { [key: string]: unknown }

/** The definition a model sees. */
export interface ToolDefinition {
  name: 'ask_user_question'
  description: string
  parameters: JsonSchema
}

/** The arguments the model sends (`multi_select`, as in the schema). */
export interface AskUserQuestionToolArgs {
  questions: Array<{
    id: string
    question: string
    header?: string
    options?: AskUserQuestionOption[]
    multi_select?: boolean
    [key: string]: unknown
  }>
}

/** A tool result (docs/reference.md §9): never an exception. */
export type ToolResult =
  | {
      isError: false
      value: AskUserQuestionAnswer
      content: [{ type: 'text'; text: string }]
    }
  | {
      isError: true
      error: { name: 'UserQuestionError'; code: UserQuestionErrorCode; message: string }
      content: [{ type: 'text'; text: string }]
    }

/** The model-facing tool `ask_user_question` over one context. */
export declare class AskUserQuestionTool {
  constructor(ctx: Context)
  readonly name: 'ask_user_question'
  readonly description: string
  readonly parameters: JsonSchema
  readonly definition: ToolDefinition
  /**
   * Asks with the caller's agent, signal, deadline and key (never the model's); resolves with
   * the tool result, never rejects. A deadline that passes is the failure form, `ASK_TIMED_OUT`.
   */
  execute(
    args: AskUserQuestionToolArgs | unknown,
    exec?: { agent?: Agent; signal?: AbortSignal; timeoutMs?: number; key?: string },
  ): Promise<ToolResult>
}

/** Returns when `answer` fits `questions`; throws `BAD_ANSWER` with the reason otherwise. */
export declare function validateAnswer(
  questions: AskUserQuestionItem[],
  answer: AskUserQuestionAnswer,
): void
