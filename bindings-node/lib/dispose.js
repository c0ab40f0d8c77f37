// @ts-check
// Disposers: idempotent functions that are also `Symbol.dispose`-able (`using`).
'use strict'

const disposeSymbol = Symbol.dispose ?? Symbol.for('Symbol.dispose')

/**
 * @typedef {(() => void) & { [Symbol.dispose](): void }} Disposer
 */

/**
 * @param {() => void} fn
 * @returns {Disposer}
 */
function withDispose(fn) {
  Object.defineProperty(fn, disposeSymbol, { value: fn })
  return /** @type {Disposer} */ (fn)
}

module.exports = { disposeSymbol, withDispose }
