"""The reference a user would write instead of the library: the original design's ask(), in Python.

Faithful to the original design (docs/reference.md §12): the signal check, the empty check, the agent
check through a registry whose roots() is a list scan (O(n) in live agents), the intent
checks, the provider check, then `await provider.ask(request)`. Used only by the benchmarks.
"""

import json


class ReferenceError(Exception):
    def __init__(self, message, code):
        super().__init__(message)
        self.message = message
        self.code = code


class ReferenceAgentRegistry:
    def __init__(self):
        self._agents = {}
        self._roots = []

    def enter(self, agent, owner=None):
        if agent.id in self._agents:
            raise ReferenceError(f"agent {json.dumps(agent.id)} is already registered", "AGENT_EXISTS")
        self._agents[agent.id] = agent
        if owner is None:
            self._roots.append(agent)

    def get(self, agent_id):
        return self._agents.get(agent_id)

    def roots(self):
        return list(self._roots)


class ReferenceService:
    def __init__(self, agents):
        self.agents = agents
        self.provider = None

    def register_provider(self, provider):
        if self.provider is not None:
            raise ReferenceError("a user-questions provider is already registered", "DUPLICATE_PROVIDER")
        self.provider = provider

        def dispose():
            self.provider = None

        return dispose

    async def ask(self, request):
        signal = request.get("signal")
        if signal is not None and signal.aborted:
            raise ReferenceError("ask_user_question was aborted before the user answered", "ASK_ABORTED")
        questions = request["questions"]
        if len(questions) == 0:
            raise ReferenceError("ask_user_question requires at least one question", "EMPTY_QUESTIONS")
        agent = request.get("agent")
        if agent is not None:
            if self.agents.get(agent.id) is not agent:
                raise ReferenceError(
                    "human interaction requires the exact live calling agent when an agent is supplied",
                    "CALLER_NOT_LIVE",
                )
            if agent not in self.agents.roots():
                raise ReferenceError(
                    "human interaction is unavailable while the calling agent is owned by another live agent; "
                    "include the unresolved question or decision in the child agent's final result",
                    "DELEGATED_CALLER",
                )
        for question in questions:
            intent = question.get("intent")
            if intent is None:
                continue
            if not any(o["label"] == intent["approve"] for o in question.get("options") or []):
                raise ReferenceError(
                    f"question {question['id']} declares intent {intent['kind']} whose approve label "
                    f"{json.dumps(intent['approve'])} names none of its options",
                    "BAD_INTENT",
                )
            if question.get("detail") is None:
                raise ReferenceError(
                    f"question {question['id']} declares intent {intent['kind']} without the detail it reviews",
                    "BAD_INTENT",
                )
        if self.provider is None:
            raise ReferenceError("no user-questions provider is registered", "NO_PROVIDER")
        return await self.provider.ask(request)
