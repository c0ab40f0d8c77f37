// @ts-check
// The question page inside the host's own web app (§25): a Fetch API handler, and its
// adapter for node:http and Express. The person API is the Rust handler every server of the
// page uses; this module only carries requests and responses to and from it.
'use strict'

const { Readable } = require('node:stream')
const native = require('../native.js')
const { callNative, invalidArgument } = require('./errors.js')
const { QuestionInbox, inboxNativeOf } = require('./inbox.js')

/** A body longer than this is 413; reading stops one byte past it. */
const MAX_BODY = 8 * 1024 * 1024

/**
 * @typedef {{ id: string, name?: string, groups?: string[] }} Person
 * @typedef {(request: Request) => Person | null | undefined | Promise<Person | null | undefined>} Authenticate
 * @typedef {((request: Request) => Promise<Response>) & { readonly token: string | null, readonly closed: boolean, close(): void }} FetchHandler
 */

/**
 * `basePath` as a prefix: empty, or `/a/b` (no trailing slash).
 * @param {unknown} basePath
 * @returns {string}
 */
function prefixOf(basePath) {
  if (basePath === undefined || basePath === null) return ''
  if (typeof basePath !== 'string' || (basePath !== '' && !basePath.startsWith('/'))) {
    throw invalidArgument('basePath must be a string starting with /')
  }
  return basePath.replace(/\/+$/, '')
}

/**
 * The request's body, cut one byte past the limit (the handler answers 413).
 * @param {Request} request
 * @returns {Promise<Buffer>}
 */
async function readBody(request) {
  if (request.body === null) return Buffer.alloc(0)
  const reader = request.body.getReader()
  /** @type {Uint8Array[]} */
  const parts = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    parts.push(value)
    size += value.byteLength
    if (size > MAX_BODY) {
      reader.cancel().catch(() => {})
      break
    }
  }
  return Buffer.concat(parts).subarray(0, MAX_BODY + 1)
}

/**
 * The page and person API of `inbox` (§19) as a Fetch API handler (§25), for Hono, Next.js
 * route handlers or any Fetch server; `toNodeHandler` adapts it to `node:http` and Express.
 *
 * `authenticate(request)` (sync or async) returns the signed-in person `{id, name?, groups?}`
 * or `null` (401); that person is who answered (`respondent`) and sees only the questions
 * addressed to their id or groups. Without it, `token` (default: random, see `handler.token`)
 * logs in as in §19. `basePath` is where the handler is mounted (`/questions`): the part of
 * each request's path below it is routed, and the page's login stays under it.
 *
 * @param {QuestionInbox} inbox
 * @param {{ authenticate?: Authenticate | null, token?: string | null, basePath?: string }} [options]
 * @returns {FetchHandler}
 */
function createFetchHandler(inbox, options) {
  if (!(inbox instanceof QuestionInbox)) throw invalidArgument('inbox must be a QuestionInbox')
  const authenticate = options?.authenticate ?? null
  const token = options?.token ?? null
  if (authenticate !== null && typeof authenticate !== 'function') {
    throw invalidArgument('authenticate must be a function')
  }
  if (token !== null && typeof token !== 'string') throw invalidArgument('token must be a string')
  if (authenticate !== null && token !== null) {
    throw invalidArgument('give authenticate or token, not both')
  }
  const prefix = prefixOf(options?.basePath)
  const page = callNative(() => new native.NativeMount(inboxNativeOf(inbox), token, authenticate !== null))

  /**
   * @param {Request} request
   * @returns {Promise<Response>}
   */
  async function handler(request) {
    const url = new URL(request.url)
    let path = url.pathname
    if (prefix !== '') {
      if (path === prefix) path = ''
      else if (path.startsWith(`${prefix}/`)) path = path.slice(prefix.length)
      else return new Response(null, { status: 404 })
    }
    const person = authenticate === null ? null : ((await authenticate(request)) ?? null)
    const body = await readBody(request)
    const headers = [...request.headers]
    if (!request.headers.has('host')) headers.push(['host', url.host])
    const head = JSON.stringify({
      method: request.method,
      path,
      query: url.search.slice(1),
      headers,
      prefix,
      scheme: url.protocol.slice(0, -1),
      person,
    })
    const answered = callNative(() => page.handle(head, body))
    /** @type {{ status: number, headers: [string, string][], body: string | null, stream: number | null }} */
    const response = JSON.parse(await answered)
    const responseHeaders = new Headers(response.headers)
    const stream = response.stream
    if (stream === null) {
      return new Response(response.body, { status: response.status, headers: responseHeaders })
    }
    const end = () => page.closeStream(stream)
    request.signal.addEventListener('abort', end, { once: true })
    const encoder = new TextEncoder()
    const events = new ReadableStream({
      async pull(controller) {
        /** @type {string | null} */
        const chunk = JSON.parse(await page.next(stream))
        if (chunk === null) {
          request.signal.removeEventListener('abort', end)
          controller.close()
        } else {
          controller.enqueue(encoder.encode(chunk))
        }
      },
      cancel: end,
    })
    return new Response(events, { status: response.status, headers: responseHeaders })
  }

  Object.defineProperties(handler, {
    token: { get: () => page.token, enumerable: true },
    closed: { get: () => page.closed, enumerable: true },
    close: { value: () => page.close() },
  })
  return /** @type {FetchHandler} */ (handler)
}

/**
 * A Fetch handler as a `(req, res)` listener for `node:http` and Express (`app.use('/questions',
 * toNodeHandler(handler))`: give the handler the same `basePath`; mount it before body
 * parsers). The client going away ends the event stream.
 *
 * @param {(request: Request) => Promise<Response>} handler
 * @returns {(req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => Promise<void>}
 */
function toNodeHandler(handler) {
  if (typeof handler !== 'function') throw invalidArgument('handler must be a function')
  return async (req, res) => {
    const gone = new AbortController()
    res.on('close', () => gone.abort())
    const encrypted = /** @type {{ encrypted?: boolean }} */ (req.socket).encrypted === true
    const original = /** @type {{ originalUrl?: string }} */ (req).originalUrl
    const url = new URL(original ?? req.url ?? '/', `${encrypted ? 'https' : 'http'}://${req.headers.host ?? 'localhost'}`)
    const headers = new Headers()
    for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
      headers.append(req.rawHeaders[i], req.rawHeaders[i + 1])
    }
    const method = req.method ?? 'GET'
    /** @type {RequestInit & { duplex?: 'half' }} */
    const init = { method, headers, signal: gone.signal }
    if (method !== 'GET' && method !== 'HEAD') {
      init.body = /** @type {ReadableStream} */ (Readable.toWeb(req))
      init.duplex = 'half'
    }
    let response
    try {
      response = await handler(new Request(url, init))
    } catch (err) {
      if (!res.headersSent) {
        res.statusCode = 500
        res.end()
      }
      throw err
    }
    res.statusCode = response.status
    for (const [name, value] of response.headers) {
      if (name !== 'set-cookie') res.setHeader(name, value)
    }
    const cookies = response.headers.getSetCookie()
    if (cookies.length > 0) res.setHeader('set-cookie', cookies)
    if (response.body === null) {
      res.end()
      return
    }
    res.flushHeaders()
    const reader = response.body.getReader()
    gone.signal.addEventListener('abort', () => reader.cancel().catch(() => {}), { once: true })
    try {
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        res.write(value)
      }
    } catch {
      // The client went away: the stream was cancelled.
    }
    res.end()
  }
}

module.exports = { createFetchHandler, toNodeHandler }
