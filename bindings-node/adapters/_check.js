// @ts-check
// Small shape checks the converters share: every refusal is INVALID_REQUEST naming the path,
// like the core's own well-formedness messages (§3). The same messages as the Python package.
'use strict'

const { UserQuestionError } = require('../lib/errors.js')
const { validateAnswer } = require('../lib/tool.js')

/**
 * @param {string} message
 * @returns {never}
 */
function refuse(message) {
  throw new UserQuestionError(message, 'INVALID_REQUEST')
}

/**
 * Refuses a question batch that is not well-formed with the core's own message
 * (INVALID_REQUEST naming the path, §3), as the core reads an ask's questions.
 * @param {unknown} questions
 * @returns {void}
 */
function wellFormed(questions) {
  try {
    // Against an empty answer: what the questions are is checked first, then the answer,
    // whose mismatch (BAD_ANSWER) says nothing about them.
    validateAnswer(/** @type {any} */ (questions), { answers: [] })
  } catch (err) {
    if (/** @type {UserQuestionError} */ (err).code === 'INVALID_REQUEST') throw err
  }
}

/**
 * @param {unknown} value
 * @returns {value is Record<string, unknown>}
 */
function isObject(value) {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
}

/**
 * @param {unknown} value
 * @param {string} path
 * @returns {Record<string, unknown>}
 */
function obj(value, path) {
  if (!isObject(value)) refuse(`${path} must be an object`)
  return value
}

/**
 * @param {unknown} value
 * @param {string} path
 * @returns {string}
 */
function string(value, path) {
  if (typeof value !== 'string') refuse(`${path} must be a string`)
  return value
}

/**
 * An optional string field: absent or null is `undefined`.
 * @param {Record<string, unknown>} parent
 * @param {string} key
 * @param {string} path
 * @returns {string | undefined}
 */
function optString(parent, key, path) {
  const value = parent[key]
  if (value === undefined || value === null) return undefined
  return string(value, `${path}.${key}`)
}

/**
 * An optional boolean field: absent or null is `false`.
 * @param {Record<string, unknown>} parent
 * @param {string} key
 * @param {string} path
 * @returns {boolean}
 */
function optBool(parent, key, path) {
  const value = parent[key]
  if (value === undefined || value === null) return false
  if (typeof value !== 'boolean') refuse(`${path}.${key} must be a boolean`)
  return value
}

/**
 * @param {unknown} value
 * @param {string} path
 * @returns {unknown[]}
 */
function array(value, path) {
  if (!Array.isArray(value)) refuse(`${path} must be an array`)
  return value
}

/**
 * Sets `record[key]` as an own, enumerable property whatever `key` is: a key such as
 * `__proto__` (a question's id or text) becomes a field, not the record's prototype.
 * @template T
 * @param {Record<string, T>} record
 * @param {string} key
 * @param {T} value
 */
function setOwn(record, key, value) {
  Object.defineProperty(record, key, { value, enumerable: true, writable: true, configurable: true })
}

module.exports = { refuse, isObject, obj, string, optString, optBool, array, setOwn, wellFormed }
