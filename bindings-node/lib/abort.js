// @ts-check
// Abort signals (§4): the standard `AbortSignal`, linked to native aborts.
'use strict'

const native = require('../native.js')
const { UserQuestionError } = require('./errors.js')

/**
 * @param {unknown} signal
 * @returns {signal is AbortSignal}
 */
function isAbortSignal(signal) {
  if (signal === null || typeof signal !== 'object') return false
  const s = /** @type {Record<string, unknown>} */ (signal)
  return (
    typeof s.aborted === 'boolean' &&
    typeof s.addEventListener === 'function' &&
    typeof s.removeEventListener === 'function'
  )
}

/**
 * @typedef {{ aborts: Set<native.NativeAbort>, onAbort: () => void }} Link
 */

/**
 * signal → the native aborts of its asks in flight. One `abort` listener per signal, however
 * many asks share it (so a host passing one signal to many asks gets no listener warnings).
 * @type {WeakMap<AbortSignal, Link>}
 */
const linkedSignals = new WeakMap()

/** What `linkSignal` gives for no signal. @type {[null, () => void]} */
const NOT_LINKED = [null, () => {}]

/**
 * Links a standard `AbortSignal` to a new native abort: an already-aborted signal aborts it
 * at once; otherwise the signal's shared `abort` listener does (the caller's `onabort` and
 * listeners are never touched). Returns `[nativeAbort, unlink]`; `unlink` takes the listener
 * off once the signal's last ask has settled. Throws `INVALID_REQUEST` for a non-signal.
 * @param {unknown} signal
 * @returns {[native.NativeAbort | null, () => void]}
 */
function linkSignal(signal) {
  if (signal == null) return NOT_LINKED
  if (!isAbortSignal(signal)) {
    throw new UserQuestionError('signal must be an AbortSignal', 'INVALID_REQUEST')
  }
  const abort = new native.NativeAbort()
  if (signal.aborted) {
    abort.abort()
    return [abort, () => {}]
  }
  let link = linkedSignals.get(signal)
  if (link === undefined) {
    /** @type {Set<native.NativeAbort>} */
    const aborts = new Set()
    const onAbort = () => {
      linkedSignals.delete(signal)
      for (const a of aborts) a.abort()
      aborts.clear()
    }
    link = { aborts, onAbort }
    linkedSignals.set(signal, link)
    signal.addEventListener('abort', onAbort, { once: true })
  }
  link.aborts.add(abort)
  const current = link
  return [
    abort,
    () => {
      if (!current.aborts.delete(abort) || current.aborts.size > 0) return
      if (linkedSignals.get(signal) === current) linkedSignals.delete(signal)
      signal.removeEventListener('abort', current.onAbort)
    },
  ]
}

module.exports = { linkSignal }
