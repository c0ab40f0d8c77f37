// @ts-check
// Agents (§5): the JS `Agent` over one native agent, and the registry of a context.
'use strict'

const native = require('../native.js')
const { callNative, field, invalidArgument } = require('./errors.js')
const { withDispose } = require('./dispose.js')

/** key → WeakRef<Agent>: how a provider gets back the very object the asker passed. */
/** @type {Map<number, WeakRef<Agent>>} */
const agentsByKey = new Map()
/** @type {FinalizationRegistry<number>} */
const agentFinalizer = new FinalizationRegistry((key) => {
  const ref = agentsByKey.get(key)
  if (ref !== undefined && ref.deref() === undefined) agentsByKey.delete(key)
})
/** key → [agent, count]: agents of asks in flight, held so their provider can see them. */
/** @type {Map<number, [Agent, number]>} */
const pinnedAgents = new Map()

/**
 * The live JS agent of a native key, if it is still reachable.
 * @param {number} key
 * @returns {Agent | undefined}
 */
function agentByKey(key) {
  return agentsByKey.get(key)?.deref()
}

/** @type {(agent: Agent) => native.NativeAgent} */
let nativeOf
/** @type {(agent: Agent) => number} */
let keyOf
/** @type {(value: unknown) => boolean} */
let hasAgentBrand

/** An agent instance. Identity is the instance: two agents with one id are different agents. */
class Agent {
  /** @type {native.NativeAgent} */
  #native
  /** Its native agent's key (fixed for life: read once, not on every ask). @type {number} */
  #key

  /**
   * @param {string} id
   * @param {{ delegationDepth?: number }} [options] `delegationDepth`: durable lineage,
   *   informational only (default 0)
   */
  constructor(id, options) {
    if (typeof id !== 'string') throw invalidArgument('an agent id must be a string')
    const depth = options?.delegationDepth ?? 0
    if (!Number.isInteger(depth) || depth < 0 || depth > 0xffffffff) {
      throw invalidArgument('delegationDepth must be an integer from 0 to 4294967295')
    }
    this.#native = new native.NativeAgent(id, depth)
    const key = this.#native.key
    this.#key = key
    agentsByKey.set(key, new WeakRef(this))
    agentFinalizer.register(this, key)
  }

  /** The agent's id. */
  get id() {
    return this.#native.id
  }

  /** The durable lineage depth; never used to decide who may ask. */
  get delegationDepth() {
    return this.#native.delegationDepth
  }

  /** `{id, delegationDepth}`, for logs; the identity is the instance, not this data. */
  toJSON() {
    return { id: this.id, delegationDepth: this.delegationDepth }
  }

  [Symbol.for('nodejs.util.inspect.custom')]() {
    return `Agent ${JSON.stringify(this.toJSON())}`
  }

  static {
    nativeOf = (agent) => agent.#native
    keyOf = (agent) => agent.#key
    hasAgentBrand = (value) => typeof value === 'object' && value !== null && #native in value
  }
}

/**
 * Whether `value` is an `Agent` of this package: a brand check, which never throws and never
 * runs a Proxy's trap (an object made from `Agent.prototype` without the constructor is not one).
 * @param {unknown} value
 * @returns {value is Agent}
 */
function isAgent(value) {
  return hasAgentBrand(value)
}

/**
 * The native agent to check for `agent`: its own, or — for anything that is not an `Agent`
 * of this package — a fresh instance that was never entered, so the core's check #3 rejects
 * it `CALLER_NOT_LIVE` in its place in the order.
 * @param {unknown} agent
 * @returns {native.NativeAgent}
 */
function nativeAgentFor(agent) {
  if (isAgent(agent)) return nativeOf(agent)
  const id = field(agent, 'id', undefined)
  return new native.NativeAgent(typeof id === 'string' ? id : '', 0)
}

/**
 * Holds `agent` while its ask is in flight; returns the key to unpin with.
 * @param {unknown} agent
 * @returns {number | undefined}
 */
function pinAgent(agent) {
  if (!isAgent(agent)) return undefined
  const key = keyOf(agent)
  const entry = pinnedAgents.get(key)
  if (entry) entry[1] += 1
  else pinnedAgents.set(key, [agent, 1])
  return key
}

/** @param {number | undefined} key */
function unpinAgent(key) {
  if (key === undefined) return
  const entry = pinnedAgents.get(key)
  if (entry && --entry[1] === 0) pinnedAgents.delete(key)
}

/** The live agents of one context. */
class AgentRegistry {
  /** @type {native.NativeContext} */
  #native
  /** key → Agent: the entered agents, held while live. */
  /** @type {Map<number, Agent>} */
  #live = new Map()

  /** @param {native.NativeContext} nativeContext */
  constructor(nativeContext) {
    this.#native = nativeContext
  }

  /**
   * Registers the exact instance `agent`; `owner` is the live agent whose runtime created
   * it (absent for a runtime root). Throws `AGENT_EXISTS` when its id is live. Returns an
   * idempotent detach function scoped to this registration: a stale one never removes a later
   * agent that reuses the id, nor this same instance entered again.
   * @param {Agent} agent
   * @param {Agent | null} [owner]
   */
  enter(agent, owner) {
    if (!isAgent(agent)) throw invalidArgument('enter() needs an Agent')
    if (owner != null && !isAgent(owner)) {
      throw invalidArgument('the owner must be an Agent (or absent for a runtime root)')
    }
    const nativeAgent = nativeOf(agent)
    const nativeContext = this.#native
    const registration = callNative(() =>
      nativeContext.enterAgent(nativeAgent, owner == null ? null : nativeOf(owner)),
    )
    const key = nativeAgent.key
    this.#live.set(key, agent)
    return withDispose(() => {
      // Removes only this registration: a later one under the same id stays, whoever entered it.
      nativeContext.detachAgent(nativeAgent, registration)
      if (nativeContext.agentKey(nativeAgent.id) !== key) this.#live.delete(key)
    })
  }

  /**
   * The live agent registered under `id`, or `undefined`.
   * @param {string} id
   * @returns {Agent | undefined}
   */
  get(id) {
    if (typeof id !== 'string') return undefined
    const key = this.#native.agentKey(id)
    return key == null ? undefined : this.#live.get(key)
  }

  /**
   * Live agents entered without an owner, in entry order.
   * @returns {Agent[]}
   */
  roots() {
    return this.#entered(this.#native.rootKeys())
  }

  /**
   * All live agents, in entry order.
   * @returns {Agent[]}
   */
  list() {
    return this.#entered(this.#native.agentKeys())
  }

  /** @param {number[]} keys */
  #entered(keys) {
    return keys.map((key) => /** @type {Agent} */ (this.#live.get(key)))
  }
}

module.exports = {
  Agent,
  AgentRegistry,
  agentByKey,
  isAgent,
  nativeAgentFor,
  pinAgent,
  unpinAgent,
}
