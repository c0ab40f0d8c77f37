// @ts-check
// Copies of the plain data an ask carries from one JS side to the other.
//
// An ask whose provider is written in JS carries JS data both ways: the asker's questions to
// the provider, the provider's answer to the asker. The core checks each as JSON text; the
// other side used to get a parse of the core's text back. When the data is *plain* — arrays
// and plain objects holding exactly the wire fields (§2) with values of their wire types,
// strings well-formed — the JS layer copies it once, sends the JSON of the copy (what
// `JSON.stringify` of the original gives, keys in wire order) and hands the other side the copy
// itself: the data the core checked, read once (a getter runs once), shared with nobody. Any
// other shape (unknown fields, `null`s, class instances, `toJSON`, other types) is not
// copied, and takes the JSON path with its messages.
'use strict'

const objectPrototype = Object.prototype
const arrayPrototype = Array.prototype
const getPrototypeOf = Object.getPrototypeOf
const isArray = Array.isArray

/**
 * @typedef {{ label: string, description?: string }} OptionCopy
 * @typedef {{ kind: string, approve: string }} IntentCopy
 * @typedef {{
 *   id: string, question: string, detail?: string, header?: string,
 *   options?: OptionCopy[], multiSelect?: boolean, intent?: IntentCopy,
 * }} QuestionCopy
 * @typedef {{ id: string, selected: string[], custom?: string }} AnswerItemCopy
 * @typedef {{ answers: AnswerItemCopy[] }} AnswerCopy
 */

/**
 * Whether `JSON.stringify` of plain objects and arrays is plain: nobody gave their prototypes
 * a `toJSON` (strings, booleans and numbers never consult one).
 */
function jsonIsPlain() {
  return (
    /** @type {{ toJSON?: unknown }} */ (objectPrototype).toJSON === undefined &&
    /** @type {{ toJSON?: unknown }} */ (arrayPrototype).toJSON === undefined
  )
}

/**
 * @param {unknown} value
 * @returns {value is Record<string, unknown>}
 */
function isPlainObject(value) {
  return typeof value === 'object' && value !== null && getPrototypeOf(value) === objectPrototype
}

/**
 * @param {unknown} value
 * @returns {value is unknown[]}
 */
function isPlainArray(value) {
  return isArray(value) && getPrototypeOf(value) === arrayPrototype
}

/**
 * A string that JSON carries as it is (no lone surrogate, which JSON escapes and the core
 * refuses with a message naming where it met it first).
 * @param {unknown} value
 * @returns {value is string}
 */
function isText(value) {
  if (typeof value !== 'string') return false
  // `isWellFormed` is ES2024 (Node >= 20 has it; the type checker's library may not).
  const text = /** @type {{ isWellFormed(): boolean }} */ (/** @type {unknown} */ (value))
  return text.isWellFormed()
}

/**
 * @param {unknown} value
 * @returns {OptionCopy | undefined}
 */
function optionCopy(value) {
  if (!isPlainObject(value)) return undefined
  let label
  let description
  for (const key in value) {
    const field = value[key]
    if (key === 'label') {
      if (!isText(field)) return undefined
      label = field
    } else if (key === 'description') {
      if (field !== undefined && !isText(field)) return undefined
      description = field
    } else {
      return undefined
    }
  }
  if (label === undefined) return undefined
  /** @type {OptionCopy} */
  const copy = { label }
  if (description !== undefined) copy.description = description
  return copy
}

/**
 * @param {unknown} value
 * @returns {IntentCopy | undefined}
 */
function intentCopy(value) {
  if (!isPlainObject(value)) return undefined
  let kind
  let approve
  for (const key in value) {
    const field = value[key]
    if (!isText(field)) return undefined
    if (key === 'kind') kind = field
    else if (key === 'approve') approve = field
    else return undefined
  }
  if (kind === undefined || approve === undefined) return undefined
  return { kind, approve }
}

/**
 * @template T
 * @param {unknown} value
 * @param {(item: unknown) => T | undefined} copyItem
 * @returns {T[] | undefined}
 */
function arrayCopy(value, copyItem) {
  if (!isPlainArray(value)) return undefined
  const n = value.length
  /** @type {T[]} */
  const copy = []
  for (let i = 0; i < n; i++) {
    const item = copyItem(value[i])
    if (item === undefined) return undefined
    copy.push(item)
  }
  return copy
}

/**
 * @param {unknown} value
 * @returns {QuestionCopy | undefined}
 */
function questionCopy(value) {
  if (!isPlainObject(value)) return undefined
  let id
  let question
  let detail
  let header
  let options
  let multiSelect
  let intent
  for (const key in value) {
    const field = value[key]
    // `undefined` is a field JSON leaves out: absent, as there.
    switch (key) {
      case 'id':
        if (!isText(field)) return undefined
        id = field
        break
      case 'question':
        if (!isText(field)) return undefined
        question = field
        break
      case 'detail':
        if (field !== undefined && !isText(field)) return undefined
        detail = field
        break
      case 'header':
        if (field !== undefined && !isText(field)) return undefined
        header = field
        break
      case 'options':
        if (field !== undefined && (options = arrayCopy(field, optionCopy)) === undefined) return undefined
        break
      case 'multiSelect':
        if (field !== undefined && typeof field !== 'boolean') return undefined
        multiSelect = field
        break
      case 'intent':
        if (field !== undefined && (intent = intentCopy(field)) === undefined) return undefined
        break
      default:
        return undefined
    }
  }
  if (id === undefined || question === undefined) return undefined
  /** @type {QuestionCopy} */
  const copy = { id, question }
  if (detail !== undefined) copy.detail = detail
  if (header !== undefined) copy.header = header
  if (options !== undefined) copy.options = options
  if (multiSelect !== undefined) copy.multiSelect = multiSelect
  if (intent !== undefined) copy.intent = intent
  return copy
}

/**
 * @param {unknown} value
 * @returns {AnswerItemCopy | undefined}
 */
function answerItemCopy(value) {
  if (!isPlainObject(value)) return undefined
  let id
  let selected
  let custom
  for (const key in value) {
    const field = value[key]
    if (key === 'id') {
      if (!isText(field)) return undefined
      id = field
    } else if (key === 'selected') {
      if ((selected = arrayCopy(field, textItem)) === undefined) return undefined
    } else if (key === 'custom') {
      if (field !== undefined && !isText(field)) return undefined
      custom = field
    } else {
      return undefined
    }
  }
  if (id === undefined || selected === undefined) return undefined
  /** @type {AnswerItemCopy} */
  const copy = { id, selected }
  if (custom !== undefined) copy.custom = custom
  return copy
}

/**
 * @param {unknown} value
 * @returns {string | undefined}
 */
function textItem(value) {
  return isText(value) ? value : undefined
}

/**
 * A copy of `questions` (a request's `questions`) when they are plain data (see above), else
 * `undefined`. `JSON.stringify` of the copy is `JSON.stringify(questions)` with each object's
 * keys in wire order.
 * @param {unknown} questions
 * @returns {QuestionCopy[] | undefined}
 */
function questionsCopy(questions) {
  return jsonIsPlain() ? arrayCopy(questions, questionCopy) : undefined
}

/**
 * A copy of `answer` (a provider's answer, `{answers: [...]}`) when it is plain data (see
 * above), else `undefined`.
 * @param {unknown} answer
 * @returns {AnswerCopy | undefined}
 */
function answerCopy(answer) {
  if (!isPlainObject(answer) || !jsonIsPlain()) return undefined
  let answers
  for (const key in answer) {
    if (key !== 'answers' || (answers = arrayCopy(answer[key], answerItemCopy)) === undefined) return undefined
  }
  return answers === undefined ? undefined : { answers }
}

module.exports = { answerCopy, isText, questionsCopy }
