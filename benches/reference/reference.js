'use strict'
// The reference a user would write instead of the library: the original design's ask(), in JavaScript.
//
// Faithful to the original design (docs/reference.md §12): the signal check, the empty check, the agent
// check through a registry whose roots() is an array scan (O(n) in live agents), the intent
// checks, the provider check, then `await provider.ask(request)`. Used only by the benchmarks.

class ReferenceError extends Error {
  constructor (message, code) {
    super(message)
    this.name = 'UserQuestionError'
    this.code = code
  }
}

class ReferenceAgentRegistry {
  constructor () {
    this.agents = new Map()
    this.rootList = []
  }

  enter (agent, owner) {
    if (this.agents.has(agent.id)) throw new ReferenceError(`agent ${JSON.stringify(agent.id)} is already registered`, 'AGENT_EXISTS')
    this.agents.set(agent.id, agent)
    if (owner === undefined) this.rootList.push(agent)
  }

  get (id) { return this.agents.get(id) }

  roots () { return [...this.rootList] }
}

class ReferenceService {
  constructor (agents) {
    this.agents = agents
    this.provider = undefined
  }

  registerProvider (provider) {
    if (this.provider !== undefined) throw new ReferenceError('a user-questions provider is already registered', 'DUPLICATE_PROVIDER')
    this.provider = provider
    return () => { this.provider = undefined }
  }

  async ask (request) {
    if (request.signal?.aborted) {
      throw new ReferenceError('ask_user_question was aborted before the user answered', 'ASK_ABORTED')
    }
    if (request.questions.length === 0) {
      throw new ReferenceError('ask_user_question requires at least one question', 'EMPTY_QUESTIONS')
    }
    const agent = request.agent
    if (agent !== undefined) {
      if (this.agents.get(agent.id) !== agent) {
        throw new ReferenceError('human interaction requires the exact live calling agent when an agent is supplied', 'CALLER_NOT_LIVE')
      }
      if (!this.agents.roots().includes(agent)) {
        throw new ReferenceError("human interaction is unavailable while the calling agent is owned by another live agent; include the unresolved question or decision in the child agent's final result", 'DELEGATED_CALLER')
      }
    }
    for (const question of request.questions) {
      const intent = question.intent
      if (intent === undefined) continue
      if (!(question.options ?? []).some(option => option.label === intent.approve)) {
        throw new ReferenceError(`question ${question.id} declares intent ${intent.kind} whose approve label ${JSON.stringify(intent.approve)} names none of its options`, 'BAD_INTENT')
      }
      if (question.detail === undefined) {
        throw new ReferenceError(`question ${question.id} declares intent ${intent.kind} without the detail it reviews`, 'BAD_INTENT')
      }
    }
    if (this.provider === undefined) throw new ReferenceError('no user-questions provider is registered', 'NO_PROVIDER')
    return await this.provider.ask(request)
  }
}

module.exports = { ReferenceError, ReferenceAgentRegistry, ReferenceService }
