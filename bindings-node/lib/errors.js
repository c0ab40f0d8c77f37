// @ts-check
// Errors (§10) and the small functions every module shares.
'use strict'

const native = require('../native.js')

/**
 * §10: code name → number, frozen; the core's own table.
 * @type {Readonly<Record<string, number>>}
 */
const CODES = Object.freeze(Object.fromEntries(native.codes().map(({ name, number }) => [name, number])))

/** The one error class of the package: a stable `code` (§10) and an exact `message`. */
class UserQuestionError extends Error {
  /**
   * @param {string} message
   * @param {string} code one of the names in `CODES`
   */
  constructor(message, code) {
    super(message)
    /** @type {string} */
    this.code = code
  }
}
Object.defineProperty(UserQuestionError.prototype, 'name', {
  value: 'UserQuestionError',
  writable: true,
  configurable: true,
})

/**
 * A `UserQuestionError`, or an object that looks like one (from another copy of the package).
 * @param {unknown} err
 * @returns {err is { name: 'UserQuestionError', code: string, message: string }}
 */
function isUserQuestionError(err) {
  try {
    if (err instanceof UserQuestionError) return true
    if (err === null || typeof err !== 'object') return false
    const e = /** @type {{ name?: unknown, code?: unknown, message?: unknown }} */ (err)
    return e.name === 'UserQuestionError' && typeof e.code === 'string' && typeof e.message === 'string'
  } catch {
    // Looking at it threw (a Proxy's trap, a revoked Proxy): not one.
    return false
  }
}

/**
 * Runs a native call, turning the core's coded errors into `UserQuestionError`s, and a panic
 * caught at the addon's boundary into `INTERNAL`.
 * @template T
 * @param {() => T} fn
 * @returns {T}
 */
function callNative(fn) {
  try {
    return fn()
  } catch (err) {
    if (err instanceof Error && !(err instanceof UserQuestionError)) {
      const code = /** @type {{ code?: unknown }} */ (err).code
      if (typeof code === 'string' && Object.hasOwn(CODES, code)) {
        throw new UserQuestionError(err.message, code)
      }
      // A panic caught at the addon's boundary (napi-rs reports it as a generic failure).
      if (code === 'GenericFailure') throw new UserQuestionError(err.message, 'INTERNAL')
    }
    throw err
  }
}

/**
 * `object[name]`, read once; `unreadable` when reading it throws (a getter, a Proxy's trap),
 * `undefined` when `object` is null or undefined.
 * @param {unknown} object
 * @param {string} name
 * @param {unknown} unreadable
 * @returns {unknown}
 */
function field(object, name, unreadable) {
  if (object == null) return undefined
  try {
    return /** @type {Record<string, unknown>} */ (object)[name]
  } catch {
    return unreadable
  }
}

/**
 * What a field whose reading threw counts as: an object of no use to any field, so each is
 * refused as a value of the wrong type, with its own message (§3, §16, §20): not an
 * `AbortSignal`, not a live agent (`CALLER_NOT_LIVE`), not a `timeoutMs`, not a `key`.
 */
const UNREADABLE = Object.freeze({})

/**
 * Whether `value` is an object that is not an array (a revoked Proxy, which cannot say, is not).
 * @param {unknown} value
 * @returns {value is Record<string, unknown>}
 */
function isRecord(value) {
  if (value === null || typeof value !== 'object') return false
  try {
    return !Array.isArray(value)
  } catch {
    return false
  }
}

/** @param {string} message */
function invalidArgument(message) {
  return new UserQuestionError(message, 'INVALID_ARGUMENT')
}

/**
 * JSON text of wire data; data that JSON cannot carry fails with `code`.
 * @param {unknown} value
 * @param {string} what
 * @param {string} code
 * @returns {string}
 */
function toJson(value, what, code) {
  let text
  try {
    text = JSON.stringify(value)
  } catch (err) {
    throw new UserQuestionError(`${what} must be JSON data: ${describe(err)}`, code)
  }
  return text === undefined ? 'null' : text
}

/**
 * The message of anything thrown: its `message`, or `String(it)` when that is empty. Never
 * throws: what cannot be read (a throwing getter, a Proxy's trap, a revoked Proxy) is named by
 * its kind, `[object Object]`.
 * @param {unknown} err
 * @returns {string}
 */
function describe(err) {
  let message = ''
  try {
    if (err !== null && (typeof err === 'object' || typeof err === 'function')) {
      const m = /** @type {{ message?: unknown }} */ (err).message
      if (typeof m === 'string') message = m
    }
    if (message === '') message = String(err)
  } catch {
    try {
      message = Object.prototype.toString.call(err)
    } catch {
      // A Proxy that answers nothing (revoked, or its traps throw).
      message = typeof err === 'function' ? '[object Function]' : '[object Object]'
    }
  }
  return message
}

module.exports = {
  CODES,
  UNREADABLE,
  UserQuestionError,
  callNative,
  describe,
  field,
  invalidArgument,
  isRecord,
  isUserQuestionError,
  toJson,
}
