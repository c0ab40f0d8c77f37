// @ts-check
// MCP form-mode elicitation (§21): a question batch as `elicitation/create` and back.
//
// `toElicitation(questions)` → `{ message, requestedSchema }`: one field per question, named
// by its id (single-select: a string with `oneOf`; multi-select: an array of `anyOf`; no
// options: a string; a typed `input`, §24: the primitive schema of its kind), a sibling
// optional string `<id>.other` for every question with options, nothing required (a skip).
// A `secret` or `file` input is refused (INVALID_REQUEST naming the question): form mode
// carries neither. `fromElicitation(questions, result)` maps the client's result back:
// `accept` → the answer (a typed field's value as the item's `value`; checked by §6, a
// mismatch is PROVIDER_FAILED naming the field), `decline` / `cancel` → ASK_CANCELLED.
//
// `McpElicitationProvider` is a provider for a host that is an MCP server
// (`@modelcontextprotocol/sdk`): each ask goes to the connected client as a form elicitation.
'use strict'

const { UserQuestionError } = require('../lib/errors.js')
const { validateAnswer } = require('../lib/tool.js')
const { isObject, refuse, setOwn, wellFormed } = require('./_check.js')

/** The message of ASK_CANCELLED when the client declines or cancels (as for an inbox, §7). */
const CANCELLED = 'the user cancelled ask_user_question'
/** The message of the PROVIDER_FAILED raised when the client cannot elicit. */
const NO_ELICITATION =
  'the connected MCP client cannot answer questions: it did not declare the elicitation capability for form mode'
/**
 * The message of the PROVIDER_FAILED raised when the connection to the client closes (the client
 * went away, or the server closed it) before the client answered, or before the ask.
 */
const CLIENT_GONE = 'the connection to the MCP client closed before the user answered'
/** The SDK's `ErrorCode.ConnectionClosed`: what a request waiting as the connection closes gets. */
const CONNECTION_CLOSED = -32000
/** The longest wait the SDK's request timer takes; deadlines are the seam's (§16). */
const NO_SDK_TIMEOUT = 2147483647

/**
 * @typedef {import('../index').AskUserQuestionItem} Question
 * @typedef {import('../index').AskUserQuestionAnswer} Answer
 * @typedef {import('../index').AskUserQuestionAnswerItem} AnswerItem
 * @typedef {import('./types').Elicitation} Elicitation
 */

/** @param {string} value */
const json = (value) => JSON.stringify(value)

/** @param {Question} question */
function title(question) {
  return typeof question.header === 'string' && question.header !== '' ? question.header : question.question
}

/**
 * The primitive schema of each kind of input form mode carries (§24): `type`, `format`.
 * @type {Record<string, { type: 'string' | 'number' | 'integer' | 'boolean', format?: 'date' | 'date-time' | 'email' | 'uri' }>}
 */
const PRIMITIVES = {
  text: { type: 'string' },
  number: { type: 'number' },
  integer: { type: 'integer' },
  boolean: { type: 'boolean' },
  date: { type: 'string', format: 'date' },
  datetime: { type: 'string', format: 'date-time' },
  email: { type: 'string', format: 'email' },
  url: { type: 'string', format: 'uri' },
}
/** The constraints of an input that a primitive schema carries under the same name. */
const CARRIED = /** @type {const} */ (['minLength', 'maxLength', 'minimum', 'maximum', 'default'])
/** Why form mode cannot carry these kinds (the refusal names the question). */
const REFUSED = new Map([
  ['secret', 'MCP sends sensitive data through URL mode only'],
  ['file', 'its fields are strings, numbers and booleans'],
])
/** The words of the bounds a date's string schema cannot carry, as the core's reasons say them. */
const BOUND_WORDS = new Map([
  ['date', ['on or after', 'on or before']],
  ['datetime', ['at or after', 'at or before']],
])

/**
 * What a field's schema cannot say of its input, for its description: the bounds of a date or
 * date-time, and that a URL is http or https (`format: uri` admits any scheme).
 * @param {import('../index').AskUserQuestionInput} input
 * @returns {string[]}
 */
function inputLines(input) {
  if (input.kind === 'url') return ['An absolute http or https URL.']
  const words = BOUND_WORDS.get(input.kind)
  if (words === undefined) return []
  const bounds = []
  if (input.minimum !== undefined) bounds.push(`${words[0]} ${input.minimum}`)
  if (input.maximum !== undefined) bounds.push(`${words[1]} ${input.maximum}`)
  if (bounds.length === 0) return []
  const text = bounds.join(' and ')
  return [`${text[0].toUpperCase()}${text.slice(1)}.`]
}

/** @param {Question} question */
function description(question) {
  const lines = [question.question]
  if (question.detail !== undefined) lines.push(question.detail)
  const options = question.options ?? []
  for (const option of options) {
    if (option.description !== undefined) lines.push(`${option.label} — ${option.description}`)
  }
  for (const option of options) {
    if (option.preview !== undefined) lines.push(`Preview of ${option.label}:\n${option.preview}`)
  }
  if (question.input !== undefined) lines.push(...inputLines(question.input))
  return lines.join('\n')
}

/**
 * Refuses, naming the first such question, a batch with an input form mode cannot carry (§24:
 * a secret or a file): INVALID_REQUEST, both ways.
 * @param {Question[]} questions
 */
function formModeCarries(questions) {
  for (const question of questions) {
    const kind = question.input?.kind
    const why = kind === undefined ? undefined : REFUSED.get(kind)
    if (why !== undefined) {
      refuse(`question ${question.id} asks for a ${kind}, which MCP form elicitation cannot carry: ${why}`)
    }
  }
}

/**
 * The primitive schema of a question with `input` (§24) of a kind form mode carries.
 * @param {Question & { input: import('../index').AskUserQuestionInput }} question
 * @param {string} fieldTitle
 * @param {string} fieldDescription
 * @returns {import('./types').ElicitationField}
 */
function typedField(question, fieldTitle, fieldDescription) {
  const input = question.input
  const primitive = PRIMITIVES[input.kind]
  /** @type {Record<string, unknown>} */
  const field = { type: primitive.type, title: fieldTitle, description: fieldDescription }
  if (primitive.format !== undefined) field.format = primitive.format
  for (const key of CARRIED) {
    // A date's bounds are ISO strings, which a string schema has no place for: they are in the
    // description (and the answer is checked against them, §6).
    if (input[key] !== undefined && !((key === 'minimum' || key === 'maximum') && BOUND_WORDS.has(input.kind))) {
      field[key] = input[key]
    }
  }
  return /** @type {import('./types').ElicitationField} */ (field)
}

/**
 * Whether a typed field's value is an empty entry, a skip: no character for text (where white
 * space may be the value), nothing but white space for the other string kinds.
 * @param {string} kind
 * @param {unknown} value
 */
function blank(kind, value) {
  if (typeof value !== 'string') return false
  return kind === 'text' ? value === '' : value.trim() === ''
}

/**
 * The `elicitation/create` form parameters for a question batch (one that is not well-formed is
 * INVALID_REQUEST naming the path, §3; a secret or file input, INVALID_REQUEST naming the
 * question, §24).
 * @param {Question[]} questions
 * @returns {Elicitation}
 */
function toElicitation(questions) {
  wellFormed(questions)
  formModeCarries(questions)
  /** @type {Record<string, any>} */
  const properties = {}
  /**
   * @param {string} key
   * @param {Record<string, unknown>} field
   * @param {string} id
   */
  const put = (key, field, id) => {
    if (Object.hasOwn(properties, key)) {
      refuse(`question id ${json(id)} gives the elicitation field ${json(key)}, which another question already uses`)
    }
    setOwn(properties, key, field)
  }
  for (const question of questions) {
    const fieldTitle = title(question)
    const fieldDescription = description(question)
    const options = question.options ?? []
    const id = question.id
    if (question.input !== undefined) {
      put(id, typedField(/** @type {any} */ (question), fieldTitle, fieldDescription), id)
      continue
    }
    if (options.length === 0) {
      put(id, { type: 'string', title: fieldTitle, description: fieldDescription }, id)
      continue
    }
    const choices = options.map((o) => ({ const: o.label, title: o.label }))
    const multi = question.multiSelect === true
    put(
      id,
      multi
        ? { type: 'array', title: fieldTitle, description: fieldDescription, items: { anyOf: choices } }
        : { type: 'string', title: fieldTitle, description: fieldDescription, oneOf: choices },
      id,
    )
    // Every field's title and description are its question's (§21), the Other one's too.
    put(`${id}.other`, { type: 'string', title: fieldTitle, description: fieldDescription }, id)
  }
  return {
    message: questions.map((q) => q.question).join('\n'),
    requestedSchema: { type: 'object', properties },
  }
}

/** @param {string} message */
const failed = (message) => new UserQuestionError(message, 'PROVIDER_FAILED')

/**
 * @param {Record<string, unknown>} content
 * @param {string} key
 * @returns {string | undefined}
 */
function text(content, key) {
  const value = Object.hasOwn(content, key) ? content[key] : undefined
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'string') throw failed(`elicitation field ${json(key)} must be a string`)
  return value
}

/**
 * The client's `ElicitResult` (`{ action, content? }`) → our answer; ASK_CANCELLED for
 * decline and cancel; PROVIDER_FAILED naming what does not fit. Questions that `toElicitation`
 * refuses are refused here too, before the result.
 * @param {Question[]} questions
 * @param {unknown} result
 * @returns {Answer}
 */
function fromElicitation(questions, result) {
  wellFormed(questions)
  formModeCarries(questions)
  if (!isObject(result)) throw failed('the elicitation result must be an object')
  const action = result.action
  if (action === 'decline' || action === 'cancel') throw new UserQuestionError(CANCELLED, 'ASK_CANCELLED')
  if (action === undefined || action === null) throw failed('the elicitation result has no action')
  if (typeof action !== 'string') throw failed('the elicitation result\'s action must be a string')
  if (action !== 'accept') throw failed(`the elicitation result has an unknown action ${json(action)}`)
  let content = result.content
  if (content === undefined || content === null) content = {}
  if (!isObject(content)) throw failed('the elicitation content must be an object')
  const fields = content
  /** @type {AnswerItem[]} */
  const items = questions.map((question) => {
    const id = question.id
    const options = question.options ?? []
    const labels = options.map((o) => o.label)
    /** @type {AnswerItem} */
    const item = { id, selected: [] }
    if (question.input !== undefined) {
      const value = Object.hasOwn(fields, id) ? fields[id] : undefined
      if (value !== undefined && value !== null && !blank(question.input.kind, value)) {
        item.value = /** @type {any} */ (value) // its type and constraints are checked by §6 below
      }
      return item
    }
    if (options.length === 0) {
      const value = text(fields, id)
      if (value !== undefined && value.trim() !== '') item.custom = value
      return item
    }
    const value = Object.hasOwn(fields, id) ? fields[id] : undefined
    if (question.multiSelect === true) {
      if (value !== undefined && value !== null) {
        if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) {
          throw failed(`elicitation field ${json(id)} must be an array of strings`)
        }
        for (const label of value) {
          if (!labels.includes(label)) {
            throw failed(`elicitation field ${json(id)} selects ${json(label)}, which is not one of its options`)
          }
          if (item.selected.includes(label)) throw failed(`elicitation field ${json(id)} selects ${json(label)} twice`)
          item.selected.push(label)
        }
      }
    } else if (value !== undefined && value !== null) {
      if (typeof value !== 'string') throw failed(`elicitation field ${json(id)} must be a string`)
      if (labels.includes(value)) item.selected = [value]
      else if (value !== '') {
        throw failed(`elicitation field ${json(id)} selects ${json(value)}, which is not one of its options`)
      }
    }
    const other = text(fields, `${id}.other`)
    if (other !== undefined && other.trim() !== '') {
      item.custom = other
      if (question.multiSelect !== true) item.selected = [] // single-select: free text overrides the choice (§2)
    }
    return item
  })
  const answer = { answers: items }
  try {
    validateAnswer(questions, answer)
  } catch (err) {
    if (err instanceof UserQuestionError) {
      throw failed(`the elicitation answer does not fit its questions: ${err.message}`)
    }
    throw err
  }
  return answer
}

/**
 * Whether a client's declared capabilities include form-mode elicitation. An empty
 * `elicitation` object means form mode (the protocol's backwards-compatible default).
 * @param {unknown} capabilities
 * @returns {boolean}
 */
function supportsFormElicitation(capabilities) {
  if (!isObject(capabilities)) return false
  const elicitation = capabilities.elicitation
  if (!isObject(elicitation)) return false
  // `null` is absent, as in the Python package: `{url: null}` declares no URL mode.
  return elicitation.form != null || elicitation.url == null
}

/**
 * A provider that asks the client of an MCP server through form-mode elicitation.
 *
 * `server` is the SDK's low-level `Server` or an `McpServer` (its `.server` is used). Each ask
 * sends one `elicitation/create` request and settles from the client's result (tied to the
 * request `options.relatedRequestId` when given: a tool call's `extra.requestId`, which
 * Streamable HTTP needs to route it on that request's stream); a withdrawn ask
 * cancels the request (the client receives `notifications/cancelled`). A client that did not
 * declare form elicitation fails each ask at once with PROVIDER_FAILED (`NO_ELICITATION`):
 * capabilities are known only once a client has connected, after the provider is registered.
 * A question form mode cannot carry (a secret or file input) fails the ask with INVALID_REQUEST
 * naming it, and the client is not asked.
 * A connection that closes before the client answered (or before the ask) fails the ask with
 * PROVIDER_FAILED (`CLIENT_GONE`), unless the ask's signal is the tool call's `extra.signal`,
 * which the SDK aborts first: that ask is withdrawn, ASK_ABORTED (§4.1).
 */
class McpElicitationProvider {
  /**
   * @param {any} server
   * @param {{ relatedRequestId?: string | number }} [options]
   */
  constructor(server, options = {}) {
    const lowLevel = server && typeof server.request !== 'function' && server.server ? server.server : server
    if (!lowLevel || typeof lowLevel.request !== 'function' || typeof lowLevel.getClientCapabilities !== 'function') {
      throw new UserQuestionError('McpElicitationProvider needs an MCP Server or McpServer', 'INVALID_ARGUMENT')
    }
    /** @private */
    this.server = lowLevel
    /** @private */
    this.relatedRequestId = options.relatedRequestId
  }

  /**
   * @param {import('../index').ProviderRequest} request
   * @returns {Promise<Answer>}
   */
  async ask(request) {
    const questions = request.questions
    if (!supportsFormElicitation(this.server.getClientCapabilities())) throw failed(NO_ELICITATION)
    const params = toElicitation(questions)
    // A connection closed already: the SDK would fail the request with `Not connected`, Python's
    // as one closed while it waits (below) — both CLIENT_GONE.
    if (this.server.transport === undefined) throw failed(CLIENT_GONE)
    let result
    try {
      // `request` rather than `elicitInput`: the content is checked field by field below, with
      // the same messages as the Python package (elicitInput's own schema check would answer
      // first, in the SDK's words).
      const { ElicitResultSchema } = require('@modelcontextprotocol/sdk/types.js')
      result = await this.server.request(
        {
          method: 'elicitation/create',
          params: { mode: 'form', message: params.message, requestedSchema: params.requestedSchema },
        },
        ElicitResultSchema,
        { signal: request.signal, timeout: NO_SDK_TIMEOUT, relatedRequestId: this.relatedRequestId },
      )
    } catch (err) {
      if (err instanceof UserQuestionError) throw err
      // The connection closed while the client had the form. (An asker whose tool call's
      // `extra.signal` is the ask's has withdrawn it already: the SDK aborts the calls in flight
      // before it fails the requests it waits on, and the seam drops this failure, §4.1.)
      if (isObject(err) && err.code === CONNECTION_CLOSED) throw failed(CLIENT_GONE)
      throw failed(`the MCP client failed the elicitation: ${err instanceof Error ? err.message : String(err)}`)
    }
    return fromElicitation(questions, result)
  }
}

module.exports = {
  CANCELLED,
  CLIENT_GONE,
  NO_ELICITATION,
  McpElicitationProvider,
  fromElicitation,
  supportsFormElicitation,
  toElicitation,
}
