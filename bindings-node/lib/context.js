// @ts-check
// One context (§11): an agent registry and the `userQuestions` service.
'use strict'

const native = require('../native.js')
const { AgentRegistry } = require('./agents.js')
const { disposeSymbol } = require('./dispose.js')
const { invalidArgument } = require('./errors.js')
const { UserQuestionService, journalOpened } = require('./service.js')

/** @type {(ctx: Context) => native.NativeContext} */
let contextNativeOf

/** One context: an agent registry and the `userQuestions` service that checks against it. */
class Context {
  /** @type {native.NativeContext} */
  #native
  /** @type {AgentRegistry} */
  #agents
  /** @type {UserQuestionService} */
  #userQuestions

  /**
   * @param {{ strict?: boolean, journal?: string | null }} [options] `journal`: a file path;
   *   every ask is appended to it as JSON lines (§18); `null` or absent: none. A journal that
   *   cannot be written never fails or delays an ask; its first write error is reported once,
   *   as a process warning (`USER_QUESTIONS_JOURNAL`).
   */
  constructor(options) {
    const journal = options?.journal ?? undefined
    if (journal !== undefined && typeof journal !== 'string') {
      throw invalidArgument('journal must be a file path (a string)')
    }
    this.#native = new native.NativeContext(journal)
    if (journal !== undefined) journalOpened(this.#native)
    if (options?.strict) this.#native.strict = true
    this.#agents = new AgentRegistry(this.#native)
    this.#userQuestions = new UserQuestionService(this.#native)
  }

  /** The live agents of this context. */
  get agents() {
    return this.#agents
  }

  /** The `userQuestions` service. */
  get userQuestions() {
    return this.#userQuestions
  }

  /**
   * Disposes the provider: waiting asks settle `ASK_ABORTED`, later asks fail
   * `NO_PROVIDER`, later registrations fail. Idempotent.
   */
  dispose() {
    this.#native.dispose()
  }

  [disposeSymbol]() {
    this.dispose()
  }

  static {
    contextNativeOf = (ctx) => ctx.#native
  }
}

module.exports = { Context, contextNativeOf: (/** @type {Context} */ ctx) => contextNativeOf(ctx) }
