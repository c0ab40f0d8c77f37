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
  try {
    return (
      typeof s.aborted === 'boolean' &&
      typeof s.addEventListener === 'function' &&
      typeof s.removeEventListener === 'function'
    )
  } catch {
    // Looking at it threw (a getter, a Proxy's trap): no signal to listen to.
    return false
  }
}

/** The error for what is not an `AbortSignal` (§3: malformed input). */
function notASignal() {
  return new UserQuestionError('signal must be an AbortSignal', 'INVALID_REQUEST')
}

/**
 * The native abort of each signal that was passed to an ask: one per signal, made on its
 * first ask and kept while the signal lives, so that asks passing one signal in turn make no
 * native object each (a native object costs about a microsecond to make). It aborts when the
 * signal does while an ask waits on it, or when an ask is passed the signal already aborted.
 * @type {WeakMap<AbortSignal, native.NativeAbort>}
 */
const nativeAborts = new WeakMap()

/**
 * signal → its asks in flight and its `abort` listener. One listener per signal, however many
 * asks share it (so a host passing one signal to many asks gets no listener warnings), taken
 * off when the last of them settles.
 * @type {WeakMap<AbortSignal, { asks: number, onAbort: () => void }>}
 */
const linkedSignals = new WeakMap()

/** What `linkSignal` gives for no signal. @type {[null, () => void]} */
const NOT_LINKED = [null, () => {}]

/**
 * Links a standard `AbortSignal` to its native abort: an already-aborted signal aborts it at
 * once; otherwise the signal's shared `abort` listener does (the caller's `onabort` and
 * listeners are never touched). Returns `[nativeAbort, unlink]`; `unlink` takes the listener
 * off once the signal's last ask has settled, and never throws. Throws `INVALID_REQUEST` (and
 * nothing else) for a non-signal, also one that looks like a signal but throws when read or
 * listened to.
 * @param {unknown} signal
 * @returns {[native.NativeAbort | null, () => void]}
 */
function linkSignal(signal) {
  if (signal == null) return NOT_LINKED
  if (!isAbortSignal(signal)) throw notASignal()
  let abort = nativeAborts.get(signal)
  if (abort === undefined) {
    abort = new native.NativeAbort()
    nativeAborts.set(signal, abort)
  }
  let aborted
  try {
    aborted = signal.aborted
  } catch {
    throw notASignal()
  }
  if (aborted) {
    abort.abort()
    return [abort, () => {}]
  }
  let link = linkedSignals.get(signal)
  if (link === undefined) {
    const onAbort = () => {
      linkedSignals.delete(signal)
      nativeAborts.get(signal)?.abort()
    }
    try {
      signal.addEventListener('abort', onAbort, { once: true })
    } catch {
      throw notASignal()
    }
    link = { asks: 0, onAbort }
    linkedSignals.set(signal, link)
  }
  link.asks += 1
  const current = link
  let linked = true
  return [
    abort,
    () => {
      if (!linked) return
      linked = false
      if (--current.asks > 0 || linkedSignals.get(signal) !== current) return
      linkedSignals.delete(signal)
      try {
        signal.removeEventListener('abort', current.onAbort)
      } catch {
        // A look-alike signal that throws: the ask has settled, and that stands.
      }
    },
  ]
}

module.exports = { linkSignal }
