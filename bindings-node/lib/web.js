// @ts-check
// The web provider (§19) and the remote provider (§20), served natively.
'use strict'

const { fileURLToPath } = require('node:url')
const native = require('../native.js')
const { disposeSymbol } = require('./dispose.js')
const { callNative, invalidArgument } = require('./errors.js')

/** @type {(provider: WebProvider) => native.NativeWebProvider} */
let webNativeOf
/** @type {(provider: RemoteProvider) => native.NativeRemoteProvider} */
let remoteNativeOf

/**
 * @param {unknown} value
 * @param {string} name
 * @returns {string | null}
 */
function optionalString(value, name) {
  if (value === undefined || value === null) return null
  if (typeof value !== 'string') throw invalidArgument(`${name} must be a string`)
  return value
}

/**
 * @param {unknown} value
 * @param {string} name
 * @returns {string | null}
 */
function optionalPath(value, name) {
  if (value instanceof URL) {
    try {
      return fileURLToPath(value)
    } catch (err) {
      throw invalidArgument(`${name}: ${err instanceof Error ? err.message : String(err)}`)
    }
  }
  if (value === undefined || value === null) return null
  if (typeof value !== 'string') throw invalidArgument(`${name} must be a string or a file: URL`)
  return value
}

/**
 * A question page and JSON API over HTTP (§19), bound and serving once constructed, on
 * threads of its own: its asks never run JS, and with nothing pending it never keeps Node
 * alive. Register it as the provider and open `url`. `close()` (or `using`) stops it and
 * settles what waits on it `ASK_ABORTED`, as disposing its registration does.
 */
class WebProvider {
  /** @type {native.NativeWebProvider} */
  #native

  /**
   * @param {{ listen?: string, token?: string, access?: string | URL }} [options] `listen`:
   *   `HOST:PORT` (default `127.0.0.1:0`, a free loopback port); `token`: the token to require
   *   (default: random); `access`: the access file (a path or a `file:` URL) of people with
   *   tokens of their own (§23), instead of the one token
   */
  constructor(options) {
    const listen = optionalString(options?.listen, 'listen')
    const token = optionalString(options?.token, 'token')
    const access = optionalPath(options?.access, 'access')
    this.#native = callNative(() => new native.NativeWebProvider(listen, token, access))
  }

  /**
   * `http://HOST:PORT/?token=TOKEN`: open it to answer; `http://HOST:PORT/` with `access`,
   * where each person signs in with their own token.
   */
  get url() {
    return this.#native.url
  }

  /**
   * The token the page and API require (`Authorization: Bearer TOKEN`). With `access`, a random
   * token the server does not accept: people use their own.
   */
  get token() {
    return this.#native.token
  }

  /** The host the server is bound to. */
  get host() {
    return this.#native.host
  }

  /** The port the server is bound to. */
  get port() {
    return this.#native.port
  }

  /** Whether `close()` was called. */
  get closed() {
    return this.#native.closed
  }

  /**
   * Stops the server: what waits on it settles `ASK_ABORTED`, the port is released and the
   * server's thread has ended when this returns. Idempotent.
   */
  close() {
    callNative(() => this.#native.close())
  }

  [disposeSymbol]() {
    this.close()
  }

  static {
    webNativeOf = (provider) => provider.#native
  }
}

/**
 * A provider that asks through a hub (`uq serve`, §20): each ask is posted to the hub and
 * settled from its outcome, on threads of its own (its asks never run JS).
 */
class RemoteProvider {
  /** @type {native.NativeRemoteProvider} */
  #native

  /**
   * @param {{ url: string, token?: string }} options `url`: the hub (`http://HOST:PORT`, or the
   *   `open` URL it prints, whose token serves when `token` is not given)
   */
  constructor(options) {
    const url = options?.url
    if (typeof url !== 'string') throw invalidArgument('url must be a string')
    const token = optionalString(options?.token, 'token') ?? ''
    this.#native = callNative(() => new native.NativeRemoteProvider(url, token))
  }

  /** The hub's address (`http://HOST:PORT`). */
  get url() {
    return this.#native.url
  }

  static {
    remoteNativeOf = (provider) => provider.#native
  }
}

module.exports = {
  WebProvider,
  RemoteProvider,
  webNativeOf: (/** @type {WebProvider} */ provider) => webNativeOf(provider),
  remoteNativeOf: (/** @type {RemoteProvider} */ provider) => remoteNativeOf(provider),
}
