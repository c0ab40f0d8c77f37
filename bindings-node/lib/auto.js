// @ts-check
// The auto-responder (§8): answers at once by a policy.
'use strict'

const native = require('../native.js')
const { callNative, invalidArgument, toJson } = require('./errors.js')

/** @type {(responder: AutoResponder) => native.NativeAutoResponder} */
let autoNativeOf

/** Answers at once by a policy, for tests, evals and headless runs (§8). */
class AutoResponder {
  /** @type {native.NativeAutoResponder} */
  #native
  /** `#native.answer`, bound (one Node-API call, no unwrapping). @type {(questionsJson: string) => string} */
  #answer

  /**
   * @param {'first' | 'recommended' | 'skip'} [policy] default `first`
   * @param {{ approveIntents?: boolean }} [options] approve intent questions (plan reviews)
   *   like any other; off by default
   */
  constructor(policy = 'first', options) {
    if (typeof policy !== 'string') throw invalidArgument('an auto-responder policy must be a string')
    const approve = Boolean(options?.approveIntents)
    this.#native = callNative(() => new native.NativeAutoResponder(policy, approve))
    this.#answer = this.#native.answerer()
  }

  /** The policy. */
  get policy() {
    return this.#native.policy
  }

  /** Whether intent questions may be approved. */
  get approveIntents() {
    return this.#native.approveIntents
  }

  /**
   * The answer this responder gives to `request.questions`.
   * @param {{ questions: unknown }} request
   */
  ask(request) {
    const json = toJson(request?.questions, 'questions', 'INVALID_REQUEST')
    return JSON.parse(callNative(() => this.#answer(json)))
  }

  static {
    autoNativeOf = (responder) => responder.#native
  }
}

module.exports = {
  AutoResponder,
  autoNativeOf: (/** @type {AutoResponder} */ responder) => autoNativeOf(responder),
}
