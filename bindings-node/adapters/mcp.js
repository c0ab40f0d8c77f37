// @ts-check
// MCP form-mode elicitation (§21): a question batch as `elicitation/create` and back.
//
// `toElicitation(questions)` → `{ message, requestedSchema }`: one field per question, named
// by its id (single-select: a string with `oneOf`; multi-select: an array of `anyOf`; no
// options: a string), a sibling optional string `<id>.other` for every question with
// options, nothing required (a skip). `fromElicitation(questions, result)` maps the client's
// result back: `accept` → the answer (checked by §6, a mismatch is PROVIDER_FAILED naming
// the field), `decline` / `cancel` → ASK_CANCELLED.
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

/** @param {Question} question */
function description(question) {
  const lines = [question.question]
  if (question.detail !== undefined) lines.push(question.detail)
  for (const option of question.options ?? []) {
    if (option.description !== undefined) lines.push(`${option.label} — ${option.description}`)
  }
  return lines.join('\n')
}

/**
 * The `elicitation/create` form parameters for a question batch (one that is not well-formed is
 * INVALID_REQUEST naming the path, §3).
 * @param {Question[]} questions
 * @returns {Elicitation}
 */
function toElicitation(questions) {
  wellFormed(questions)
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
 * decline and cancel; PROVIDER_FAILED naming what does not fit.
 * @param {Question[]} questions
 * @param {unknown} result
 * @returns {Answer}
 */
function fromElicitation(questions, result) {
  wellFormed(questions)
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
