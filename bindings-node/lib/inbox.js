// @ts-check
// The question inbox (§7): pending questions for UIs that answer later.
'use strict'

const native = require('../native.js')
const { callNative, describe, field, invalidArgument, toJson } = require('./errors.js')
const { withDispose } = require('./dispose.js')

/**
 * @param {unknown} ticket
 * @returns {number}
 */
function ticketArg(ticket) {
  if (typeof ticket !== 'number') throw invalidArgument('a ticket must be a number')
  return ticket
}

/**
 * A person `{id, name}` (§23) as JSON text, else `INVALID_ARGUMENT`.
 * @param {unknown} by
 * @returns {string}
 */
function respondentJson(by) {
  const id = field(by, 'id', undefined)
  const name = field(by, 'name', undefined)
  if (typeof by !== 'object' || typeof id !== 'string' || typeof name !== 'string') {
    throw invalidArgument('by must be an object with string id and name')
  }
  return JSON.stringify({ id, name })
}

/** @type {(inbox: QuestionInbox) => native.NativeInbox} */
let inboxNativeOf

/** Pending questions for UIs that answer later (§7). Register it as the provider. */
class QuestionInbox {
  #native = new native.NativeInbox()
  /** `#native.answer`, bound (one Node-API call, no unwrapping). */
  #answer = this.#native.answerer()

  /**
   * The pending questions `{ticket, questions, agentId?, askedAt, expiresAt?, key?, to?}` in
   * arrival order (§7, §16, §20, §23).
   * @returns {Array<Record<string, unknown>>}
   */
  pending() {
    return JSON.parse(this.#native.pendingJson())
  }

  /**
   * Answers `ticket`; throws `BAD_ANSWER` (it stays pending), `ALREADY_RESOLVED`, `NOT_PENDING`.
   * @param {number} ticket
   * @param {unknown} answer
   */
  answer(ticket, answer) {
    const t = ticketArg(ticket)
    const json = toJson(answer, 'answer', 'BAD_ANSWER')
    callNative(() => this.#answer(t, json))
  }

  /**
   * Cancels `ticket`: the asker gets `ASK_CANCELLED`. `by`, a person `{id, name}` (§23), is
   * who cancelled: subscribers hear it as the `resolved` event's `by`.
   * @param {number} ticket
   * @param {unknown} [by]
   */
  cancel(ticket, by) {
    const t = ticketArg(ticket)
    const person = by == null ? undefined : respondentJson(by)
    callNative(() => this.#native.cancel(t, person))
  }

  /**
   * Fails `ticket`: the asker gets `PROVIDER_FAILED` with `message`.
   * @param {number} ticket
   * @param {string} message
   */
  fail(ticket, message) {
    const t = ticketArg(ticket)
    if (typeof message !== 'string') throw invalidArgument('a failure message must be a string')
    callNative(() => this.#native.fail(t, message))
  }

  /**
   * Gives `ticket` more time (§16): its deadline becomes `max(deadline, now + ms)`. Returns
   * the new `expiresAt` (RFC 3339), or `undefined` when the question has no deadline; emits
   * `extended`. `ms` outside 1..2147483647 is `INVALID_ARGUMENT`; `NOT_PENDING` /
   * `ALREADY_RESOLVED` as for `answer`.
   * @param {number} ticket
   * @param {number} ms
   * @returns {string | undefined}
   */
  extend(ticket, ms) {
    const t = ticketArg(ticket)
    if (typeof ms !== 'number') throw invalidArgument('ms must be an integer from 1 to 2147483647')
    return callNative(() => this.#native.extend(t, ms)) ?? undefined
  }

  /**
   * Calls `listener` with every later event — `{type: 'requested', ticket, questions,
   * agentId?, askedAt, expiresAt?, key?, to?}`, `{type: 'resolved', ticket, outcome, by?}` and
   * `{type: 'extended', ticket, expiresAt}` — in order, on this thread: an event caused here
   * is delivered before the call that caused it returns, and a ticket's `resolved` always
   * reaches the listener before its asker can observe the settlement. A listener that throws
   * is reported as a process warning and does not stop the others. Returns an idempotent
   * unsubscribe function. A subscription does not keep the process alive.
   * @param {(event: Record<string, unknown>) => void} listener
   */
  subscribe(listener) {
    if (typeof listener !== 'function') throw invalidArgument('subscribe() needs a function')
    let active = true
    const subscription = this.#native.subscribe((json) => {
      if (!active) return
      try {
        listener(JSON.parse(json))
      } catch (err) {
        process.emitWarning(`a QuestionInbox subscriber threw: ${describe(err)}`, {
          code: 'USER_QUESTIONS_SUBSCRIBER',
        })
      }
    })
    return withDispose(() => {
      active = false
      subscription.unsubscribe()
    })
  }

  static {
    inboxNativeOf = (inbox) => inbox.#native
  }
}

module.exports = { QuestionInbox, inboxNativeOf: (/** @type {QuestionInbox} */ inbox) => inboxNativeOf(inbox) }
