// @ts-check
// The `userQuestions` service of one context (§3, §4): asking and providers.
'use strict'

const native = require('../native.js')
const { linkSignal } = require('./abort.js')
const { isAgent, nativeAgentFor, pinAgent, unpinAgent } = require('./agents.js')
const { AutoResponder, autoNativeOf } = require('./auto.js')
const { withDispose } = require('./dispose.js')
const {
  UNREADABLE,
  UserQuestionError,
  callNative,
  describe,
  field,
  invalidArgument,
  isRecord,
  toJson,
} = require('./errors.js')
const { QuestionInbox, inboxNativeOf } = require('./inbox.js')
const { dispatcherFor } = require('./provider.js')
const { isText, questionsCopy } = require('./snapshot.js')
const { TerminalProvider, terminalNativeOf } = require('./terminal.js')
const { RemoteProvider, WebProvider, remoteNativeOf, webNativeOf } = require('./web.js')

/**
 * native context → count of its asks in flight. Held so that a context whose JS object is
 * dropped while an ask waits is not garbage-collected (which would dispose it) under the ask.
 * @type {Map<native.NativeContext, number>}
 */
const busyContexts = new Map()

/**
 * Holds what an ask in flight needs until it settles: its agent pinned and its context busy.
 * Returns the pin's key, for `release`.
 * @param {native.NativeContext} nativeContext
 * @param {unknown} agent
 * @returns {number | undefined}
 */
function hold(nativeContext, agent) {
  const pinned = pinAgent(agent)
  busyContexts.set(nativeContext, (busyContexts.get(nativeContext) ?? 0) + 1)
  return pinned
}

/**
 * Lets go of what `hold` held, unlinks the ask's signal, and reports a journal error.
 * @param {native.NativeContext} nativeContext
 * @param {number | undefined} pinned
 * @param {() => void} unlink
 */
function release(nativeContext, pinned, unlink) {
  unlink()
  unpinAgent(pinned)
  const n = busyContexts.get(nativeContext)
  if (n === 1) busyContexts.delete(nativeContext)
  else if (n !== undefined) busyContexts.set(nativeContext, n - 1)
  if (journaled.has(nativeContext)) warnJournalError(nativeContext)
}

/**
 * Runs `start` (which starts one ask on `nativeContext`) with the ask's agent pinned, its
 * context held and its signal linked until the ask settles; returns the native outcome text
 * when the ask settled while it started, else a Promise of it. Throws what `start` throws.
 * @param {native.NativeContext} nativeContext
 * @param {unknown} agent
 * @param {[native.NativeAbort | null, () => void]} link from `linkSignal`
 * @param {(nativeAgent: native.NativeAgent | null, abort: native.NativeAbort | null) => string | Promise<string>} start
 * @returns {string | Promise<string>}
 */
function inFlight(nativeContext, agent, link, start) {
  const [abort, unlink] = link
  const pinned = hold(nativeContext, agent)
  let started
  try {
    // The text itself when the ask settled while it started (no tick to wait for), else a
    // Promise of it.
    started = start(agent == null ? null : nativeAgentFor(agent), abort)
  } catch (err) {
    release(nativeContext, pinned, unlink)
    throw err
  }
  if (typeof started === 'string') {
    release(nativeContext, pinned, unlink)
    return started
  }
  return started.then(
    (text) => {
      release(nativeContext, pinned, unlink)
      return text
    },
    (err) => {
      release(nativeContext, pinned, unlink)
      throw err
    },
  )
}

/**
 * The native contexts that have a journal (§18): only they can have a write error to report.
 * @type {WeakSet<native.NativeContext>}
 */
const journaled = new WeakSet()

/**
 * Marks `nativeContext` as having a journal, and reports its first write error if any.
 * @param {native.NativeContext} nativeContext
 */
function journalOpened(nativeContext) {
  journaled.add(nativeContext)
  warnJournalError(nativeContext)
}

/**
 * Reports the journal's first write error (§18) as a process warning; the core hands it out
 * exactly once, so there is one warning per context.
 * @param {native.NativeContext} nativeContext
 */
function warnJournalError(nativeContext) {
  const error = nativeContext.takeJournalError()
  if (error != null) {
    process.emitWarning(error, {
      code: 'USER_QUESTIONS_JOURNAL',
    })
  }
}

/**
 * Numbers and journals an ask that was refused before the core could read it (`refused`,
 * §18), as the core does for what it refuses, with `agent`'s id when it is an `Agent` of this
 * package; reports a journal error.
 * @param {native.NativeContext} nativeContext
 * @param {string} message the refusal's message (`INVALID_REQUEST`)
 * @param {unknown} agent
 */
function refuse(nativeContext, message, agent) {
  callNative(() => nativeContext.refuse(message, isAgent(agent) ? nativeAgentFor(agent) : null))
  if (journaled.has(nativeContext)) warnJournalError(nativeContext)
}

/**
 * The JSON text of a wire request: `questions` and, when given, `timeoutMs`, `key` and `to`
 * (§16, §20, §23), which the core checks.
 * @param {string} questions the JSON text of the request's questions
 * @param {unknown} timeoutMs
 * @param {unknown} key
 * @param {unknown} to
 * @returns {string}
 */
function requestJson(questions, timeoutMs, key, to) {
  let json = `{"questions":${questions}`
  if (timeoutMs !== undefined) {
    json += `,"timeoutMs":${toJson(wireNumber(timeoutMs), 'timeoutMs', 'INVALID_REQUEST')}`
  }
  if (key !== undefined) json += `,"key":${toJson(wireKey(key), 'key', 'INVALID_REQUEST')}`
  if (to !== undefined) json += `,"to":${JSON.stringify(wireTo(to))}`
  return `${json}}`
}

/**
 * A `to` as the core should see it (§23): an array of its strings as given, with `false` for
 * each element that is not a string, and `false` for anything that is not an array or cannot
 * be read (a throwing getter, a Proxy's trap), so that the core rejects it with its own
 * message.
 * @param {unknown} to
 * @returns {unknown}
 */
function wireTo(to) {
  try {
    // More names than the core admits (§23) need not be read.
    if (!Array.isArray(to) || to.length > 32) return false
    /** @type {unknown[]} */
    const names = []
    for (let i = 0; i < to.length; i++) names.push(wireKey(to[i]))
    return names
  } catch {
    return false
  }
}

/**
 * A number as JSON would carry it faithfully: `NaN` and the infinities (which JSON turns
 * into `null`) and a BigInt (which it cannot carry) become a string, so that the core
 * rejects them with its own message (§16).
 * @param {unknown} n
 */
function wireNumber(n) {
  return (typeof n === 'number' && !Number.isFinite(n)) || typeof n === 'bigint' ? String(n) : n
}

/**
 * A `key` as the core should see it: a string as given, anything else `false` (not a
 * string), so that the core rejects it with its own message (§20) — also a BigInt or a
 * function, which JSON cannot carry or would drop, and a string with a lone surrogate, which
 * is no string of characters (as in Python).
 * @param {unknown} key
 */
function wireKey(key) {
  return isText(key) ? key : false
}

/**
 * The native context of a `userQuestions` service (for the framework adapters, which take a
 * context or its `userQuestions`); set by the class.
 * @type {(service: object) => native.NativeContext}
 */
let serviceNativeOf

/** The `userQuestions` service of one context. */
class UserQuestionService {
  /** @type {native.NativeContext} */
  #native
  /**
   * The registered JS provider's dispatcher, which runs the calls the native ask hands back
   * (the fast path, see `provider.js`); `undefined` when no JS provider is registered.
   * @type {import('./provider.js').Dispatcher | undefined}
   */
  #dispatcher

  /**
   * `#native.ask` of a request without a signal, bound (one Node-API call, no unwrapping):
   * takes the questions' JSON text (or with `whole` the request's, with its `timeoutMs` or
   * `key`), and whether a copy of the questions is held.
   * @type {(json: string, held?: boolean, whole?: boolean) => string | number | Promise<string>}
   */
  #ask

  /**
   * The same, one per agent that asked: `#native.ask` of a request that is only questions and
   * that agent (made on its first ask; dropped with the agent).
   * @type {WeakMap<import('./agents.js').Agent, (json: string, held?: boolean, whole?: boolean) => string | number | Promise<string>>}
   */
  #askers = new WeakMap()

  /** @param {native.NativeContext} nativeContext */
  constructor(nativeContext) {
    this.#native = nativeContext
    this.#ask = nativeContext.asker()
  }

  /**
   * The bound ask of `agent` (see `#askers`).
   * @param {import('./agents.js').Agent} agent
   */
  #askerOf(agent) {
    let asker = this.#askers.get(agent)
    if (asker === undefined) {
      asker = this.#native.asker(nativeAgentFor(agent))
      this.#askers.set(agent, asker)
    }
    return asker
  }

  /**
   * An ask refused before the core could read it: numbered and journaled `refused` (§18) by
   * the core, with `agent`'s id when it is an `Agent` of this package. Returns the error to
   * throw (`INVALID_REQUEST`, `message`).
   * @param {string} message
   * @param {unknown} agent
   */
  #refused(message, agent) {
    refuse(this.#native, message, agent)
    return new UserQuestionError(message, 'INVALID_REQUEST')
  }

  /** Strict answer checking (§6 on every provider answer); off by default. */
  get strict() {
    return this.#native.strict
  }

  set strict(value) {
    this.#native.strict = Boolean(value)
  }

  /** Whether a provider is registered. */
  get hasProvider() {
    return this.#native.hasProvider
  }

  /**
   * Asks the registered provider and waits for the answer (§3, §4). Rejects with a
   * `UserQuestionError`; the provider is not reached when a check fails.
   * @param {{ questions: unknown, agent?: unknown, signal?: unknown, timeoutMs?: unknown, key?: unknown, to?: unknown }} request
   */
  async ask(request) {
    if (!isRecord(request)) throw this.#refused('request must be an object', undefined)
    // Each field is read once. One whose reading throws (a getter, a Proxy's trap) is a value
    // of the wrong type, refused with that field's own message in its place in the order.
    const agent = field(request, 'agent', UNREADABLE)
    const timeoutMs = field(request, 'timeoutMs', UNREADABLE)
    const key = field(request, 'key', UNREADABLE)
    const to = field(request, 'to', UNREADABLE)
    // With a JS provider registered, questions that are plain data are copied: the core checks
    // the copy's JSON, and a provider call on the fast path gets the copy itself (held: its
    // payload leaves them out). See `snapshot.js`.
    let given
    let held
    try {
      given = request.questions
      held = this.#dispatcher === undefined ? undefined : questionsCopy(given)
    } catch (err) {
      // Reading them threw (a getter): questions JSON cannot carry either.
      throw this.#refused(`questions must be JSON data: ${describe(err)}`, agent)
    }
    /** @type {string} */
    let questions
    /** @type {string | undefined} */
    let json
    // Only questions: the bound asker, which takes them alone (no request text to build).
    const bare = timeoutMs === undefined && key === undefined && to === undefined
    try {
      questions = held === undefined ? toJson(given, 'questions', 'INVALID_REQUEST') : JSON.stringify(held)
      json = bare ? undefined : requestJson(questions, timeoutMs, key, to)
    } catch (err) {
      // Questions JSON cannot carry (a cycle, a BigInt): refused here, numbered and journaled
      // as the core does for what it refuses (§18).
      throw this.#refused(/** @type {UserQuestionError} */ (err).message, agent)
    }
    const nativeContext = this.#native
    /** @type {[native.NativeAbort | null, () => void]} */
    let link
    try {
      link = linkSignal(field(request, 'signal', UNREADABLE))
    } catch (err) {
      // Not an AbortSignal: refused, numbered and journaled like the rest (§18).
      throw this.#refused(/** @type {UserQuestionError} */ (err).message, agent)
    }
    const [abort, unlink] = link
    /** @type {string | number | Promise<string> | import('./provider.js').Outcome} */
    let text
    try {
      // No signal, and no agent or an `Agent` of this package: a bound asker, given the
      // questions alone or (with a deadline or key) the whole request.
      text =
        abort === null && (agent == null || isAgent(agent))
          ? callNative(() =>
              (agent == null ? this.#ask : this.#askerOf(agent))(json ?? questions, held !== undefined, !bare),
            )
          : callNative(() =>
              nativeContext.ask(
                json ?? `{"questions":${questions}}`,
                agent == null ? null : nativeAgentFor(agent),
                abort,
                held !== undefined,
              ),
            )
    } catch (err) {
      unlink()
      throw err
    }
    if (typeof text === 'string' && text.charCodeAt(2) !== 99) {
      // Settled while it started (`{"answer"…`, `{"error"…`): nothing to hold, nothing to await.
      unlink()
      if (journaled.has(nativeContext)) warnJournalError(nativeContext)
    } else {
      // Waiting: a Promise of the outcome, or `{"call":…}` (or the call's number alone), the
      // payload of a JS provider call for this thread to run (the fast path). Its agent stays
      // pinned and its context busy until it settles (held before anything else can run).
      const pinned = hold(nativeContext, agent)
      try {
        text = typeof text === 'object' ? await text : await this.#runCall(text, held)
      } finally {
        release(nativeContext, pinned, unlink)
      }
    }
    const outcome = typeof text === 'string' ? JSON.parse(text) : text
    if (outcome.error !== undefined) {
      throw new UserQuestionError(outcome.error.message, outcome.error.code)
    }
    return outcome.answer
  }

  /**
   * Runs the JS provider call of `payload` (the fast path); resolves with the ask's outcome.
   * @param {string | number} payload
   * @param {unknown[] | undefined} questions the copy of the questions held for the provider
   * @returns {Promise<import('./provider.js').Outcome>}
   */
  #runCall(payload, questions) {
    const dispatcher = this.#dispatcher
    if (dispatcher === undefined) {
      // Cannot happen: only the registered JS provider's calls take the fast path.
      throw new UserQuestionError('a JS provider call came back without its provider', 'INTERNAL')
    }
    return dispatcher.run(payload, questions)
  }

  /**
   * Asks the user to review a plan (§17) through `ask()`, with all its checks and guarantees,
   * and resolves with `{decision, feedback?}`: `approved`, `revise` (with the user's feedback
   * when they wrote one), `rejected` or `dismissed`. Rejects with a `UserQuestionError`.
   * @param {unknown} plan the plan (markdown); empty is `INVALID_REQUEST`
   * @param {{ agent?: unknown, signal?: unknown, timeoutMs?: unknown, question?: unknown }} [options]
   */
  async reviewPlan(plan, options) {
    if (options != null && !isRecord(options)) {
      throw new UserQuestionError('options must be an object', 'INVALID_REQUEST')
    }
    // Each option is read once; one whose reading throws is a value of the wrong type (see `ask`).
    const question = field(options, 'question', UNREADABLE)
    const timeoutMs = field(options, 'timeoutMs', UNREADABLE)
    /** @type {Record<string, unknown>} */
    const wire = { plan }
    if (question !== undefined) wire.question = question
    if (timeoutMs !== undefined) wire.timeoutMs = wireNumber(timeoutMs)
    const json = toJson(wire, 'the review', 'INVALID_REQUEST')
    const nativeContext = this.#native
    const link = linkSignal(field(options, 'signal', UNREADABLE))
    const agent = field(options, 'agent', UNREADABLE)
    const text = await inFlight(nativeContext, agent, link, (nativeAgent, abort) =>
      callNative(() => nativeContext.reviewPlan(json, nativeAgent, abort)),
    )
    const outcome = JSON.parse(text)
    if (outcome.error !== undefined) {
      throw new UserQuestionError(outcome.error.message, outcome.error.code)
    }
    return outcome.review
  }

  /**
   * Registers the one provider of this context: any object with `ask(request)` returning an
   * answer or a Promise of one (a `QuestionInbox`, `AutoResponder`, `TerminalProvider`,
   * `WebProvider` or `RemoteProvider` is served natively: its asks never run JS).
   * Throws `DUPLICATE_PROVIDER` while another is registered. Returns an idempotent disposer
   * that settles the asks still waiting on this provider `ASK_ABORTED`.
   * @param {unknown} provider
   */
  registerProvider(provider) {
    /** @type {native.NativeRegistration} */
    let registration
    if (provider instanceof QuestionInbox) {
      registration = callNative(() => this.#native.registerInbox(inboxNativeOf(provider)))
    } else if (provider instanceof TerminalProvider) {
      registration = callNative(() => this.#native.registerTerminalProvider(terminalNativeOf(provider)))
    } else if (provider instanceof WebProvider) {
      registration = callNative(() => this.#native.registerWebProvider(webNativeOf(provider)))
    } else if (provider instanceof RemoteProvider) {
      registration = callNative(() => this.#native.registerRemoteProvider(remoteNativeOf(provider)))
    } else if (provider instanceof AutoResponder && provider.ask === AutoResponder.prototype.ask) {
      registration = callNative(() => this.#native.registerAutoResponder(autoNativeOf(provider)))
    } else {
      const p = /** @type {{ ask?: unknown } | null | undefined} */ (provider)
      if (p == null || typeof p.ask !== 'function') {
        throw invalidArgument('a provider must be an object with an ask(request) method')
      }
      const calls = new native.NativeProviderCalls()
      const dispatcher = dispatcherFor(/** @type {import('./provider.js').Provider} */ (p), calls)
      const reg = callNative(() => this.#native.registerDispatcher(dispatcher.dispatch, calls))
      this.#dispatcher = dispatcher
      return withDispose(() => {
        reg.dispose()
        if (this.#dispatcher === dispatcher) this.#dispatcher = undefined
      })
    }
    return withDispose(() => registration.dispose())
  }

  static {
    serviceNativeOf = (service) => /** @type {UserQuestionService} */ (service).#native
  }
}

module.exports = { UserQuestionService, inFlight, journalOpened, refuse, serviceNativeOf, wireKey, wireNumber }
