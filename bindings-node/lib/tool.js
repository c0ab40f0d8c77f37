// @ts-check
// The model-facing tool `ask_user_question` (§9) and answer checking (§6).
'use strict'

const native = require('../native.js')
const { linkSignal } = require('./abort.js')
const { Context, contextNativeOf } = require('./context.js')
const { UNREADABLE, callNative, describe, field, invalidArgument, toJson } = require('./errors.js')
const { UserQuestionService, inFlight, refuse, serviceNativeOf, wireKey, wireNumber } = require('./service.js')

const TOOL_DEFINITION_JSON = native.toolDefinitionJson()

/**
 * The §9 failure form, for what fails before the core is reached.
 * @param {string} code
 * @param {string} message
 */
function failureResult(code, message) {
  return JSON.parse(native.toolFailureResultJson(code, message))
}

/** The key under which `toolFor` hands the constructor a service's context (module-private). */
const FROM_SERVICE = Symbol('the context of a userQuestions service')

/** The model-facing tool `ask_user_question` over one context. */
class AskUserQuestionTool {
  /** @type {native.NativeContext} */
  #native

  /** @param {Context} ctx */
  constructor(ctx) {
    if (ctx instanceof Context) {
      this.#native = contextNativeOf(ctx)
    } else if (typeof ctx === 'object' && ctx !== null && FROM_SERVICE in ctx) {
      this.#native = /** @type {any} */ (ctx)[FROM_SERVICE]
    } else {
      throw invalidArgument('AskUserQuestionTool needs a Context')
    }
  }

  /** `ask_user_question` */
  get name() {
    return this.definition.name
  }

  /** The description the model sees. */
  get description() {
    return this.definition.description
  }

  /** The JSON Schema of the arguments. */
  get parameters() {
    return this.definition.parameters
  }

  /**
   * `{name, description, parameters}` (a fresh copy each time).
   * @returns {{ name: string, description: string, parameters: Record<string, unknown> }}
   */
  get definition() {
    return JSON.parse(TOOL_DEFINITION_JSON)
  }

  /**
   * Runs the tool: asks with the caller's agent (only when there is one), signal, deadline
   * and key (§16: from the caller, never from the model's arguments), and resolves with the
   * tool result of §9 (a deadline that passes is the failure form, `ASK_TIMED_OUT`). Never
   * rejects.
   * @param {unknown} args
   * @param {{ agent?: unknown, signal?: unknown, timeoutMs?: unknown, key?: unknown }} [exec]
   */
  async execute(args, exec) {
    const nativeContext = this.#native
    // Each of the caller's options is read once; one whose reading throws is a value of the
    // wrong type, a failure result with that option's own message (see `ask`).
    const agent = field(exec, 'agent', UNREADABLE)
    /**
     * What is refused here, before the core can read it, is numbered and journaled as the
     * core does for what it refuses (§18), and is the failure form.
     * @param {string} message
     */
    const refused = (message) => {
      try {
        refuse(nativeContext, message, agent)
      } catch {
        // Only a panic caught at the addon's boundary: the failure form stands.
      }
      return failureResult('INVALID_REQUEST', message)
    }
    let argsJson
    try {
      argsJson = JSON.stringify(args)
    } catch (err) {
      return refused(`arguments are not JSON data: ${describe(err)}`)
    }
    if (argsJson === undefined) argsJson = 'null'
    /** @type {[native.NativeAbort | null, () => void]} */
    let link
    try {
      link = linkSignal(field(exec, 'signal', UNREADABLE))
    } catch (err) {
      // Always a UserQuestionError (INVALID_REQUEST).
      return refused(/** @type {import('./errors.js').UserQuestionError} */ (err).message)
    }
    const timeoutMs = field(exec, 'timeoutMs', UNREADABLE)
    const key = field(exec, 'key', UNREADABLE)
    /** @type {Record<string, unknown>} */
    const options = {}
    if (timeoutMs !== undefined) options.timeoutMs = wireNumber(timeoutMs)
    if (key !== undefined) options.key = wireKey(key)
    const optionsJson = JSON.stringify(options)
    try {
      const text = await inFlight(nativeContext, agent, link, (nativeAgent, abort) =>
        nativeContext.executeTool(/** @type {string} */ (argsJson), nativeAgent, abort, optionsJson),
      )
      return JSON.parse(text)
    } catch (err) {
      return failureResult('INTERNAL', describe(err))
    }
  }
}

/**
 * The tool over a context or its `userQuestions` (what the framework adapters take, as in
 * Python); anything else is INVALID_ARGUMENT, `<who> needs a Context or its userQuestions`.
 * @param {unknown} target
 * @param {string} who
 */
function toolFor(target, who) {
  if (target instanceof Context) return new AskUserQuestionTool(/** @type {any} */ (target))
  if (target instanceof UserQuestionService) {
    return new AskUserQuestionTool(/** @type {any} */ ({ [FROM_SERVICE]: serviceNativeOf(target) }))
  }
  throw invalidArgument(`${who} needs a Context or its userQuestions`)
}

/**
 * Checks `answer` against `questions` (§6). Returns nothing when it fits; throws
 * `BAD_ANSWER` with the reason when it does not (`INVALID_REQUEST` for malformed questions).
 * @param {unknown} questions
 * @param {unknown} answer
 */
function validateAnswer(questions, answer) {
  const q = toJson(questions, 'questions', 'INVALID_REQUEST')
  const a = toJson(answer, 'answer', 'BAD_ANSWER')
  callNative(() => native.validateAnswer(q, a))
}

module.exports = { AskUserQuestionTool, toolFor, validateAnswer }
