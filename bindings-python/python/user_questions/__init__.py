"""user-questions: the one place where an AI agent stops a tool call and asks the human.

An asker awaits ``ctx.user_questions.ask({"questions": [...], "agent": a, "signal": s})``;
exactly one provider per :class:`Context` (any object with an ``ask(request)`` method, a
:class:`QuestionInbox`, an :class:`AutoResponder`, a :class:`TerminalProvider`) shows the
questions and returns the answer. The seam validates every request before a provider sees
it, admits only the exact live runtime-root agent, and settles every ask exactly once. The
behaviour is the Rust core's (SPEC.md); this package is a thin asyncio-native layer over it.
"""

from __future__ import annotations

import asyncio
from typing import (
    Any,
    Awaitable,
    Coroutine,
    Dict,
    Mapping,
    Optional,
    Protocol,
    TypeVar,
    Union,
)

from . import _native
from ._errors import EventLoopThreadError, UserQuestionError
from ._native import (
    AbortController,
    AbortSignal,
    Agent,
    AgentRegistry,
    AutoResponder,
    ProviderRegistration,
    QuestionInbox,
    TerminalProvider,
    validate_answer,
)

__all__ = [
    "CODES",
    "AbortController",
    "AbortSignal",
    "Agent",
    "AgentRegistry",
    "AskUserQuestionTool",
    "AutoResponder",
    "Context",
    "EventLoopThreadError",
    "Provider",
    "ProviderRegistration",
    "QuestionInbox",
    "TerminalProvider",
    "UserQuestionError",
    "UserQuestionService",
    "validate_answer",
]

__version__: str = _native.__version__

#: Every error code name → its number (SPEC §10; the numbers are the C ABI's).
CODES: Dict[str, int] = dict(_native.CODES)

#: A question, an answer, a tool result: plain dicts with the wire keys of SPEC §2.
Question = Dict[str, Any]
Answer = Dict[str, Any]
ToolResult = Dict[str, Any]
#: ``{"questions": [...], "agent": Agent, "signal": AbortSignal}`` (agent and signal optional),
#: or JSON text ``{"questions": [...]}``.
Request = Union[Mapping[str, Any], str]

_T = TypeVar("_T")


class Provider(Protocol):
    """What ``register_provider`` accepts: an object with an ``ask(request)`` method.

    ``request`` is ``{"questions": [...], "agent": Agent (only when one asked), "signal":
    AbortSignal}``. ``ask`` runs with the GIL on the asking thread and returns the answer
    dict, or an awaitable of it (run as a task on the loop that was running where the
    provider was registered, while it runs, else on the asker's loop; cancelled when the ask
    is withdrawn). Raising ``UserQuestionError`` passes its code through; any other exception
    settles the ask ``PROVIDER_FAILED`` with the exception's message.
    """

    def ask(self, request: Dict[str, Any]) -> Union[Answer, Awaitable[Answer]]: ...


def _running_loop() -> Optional[asyncio.AbstractEventLoop]:
    return asyncio._get_running_loop()


def _run_on_private_loop(main: Coroutine[Any, Any, _T]) -> _T:
    """``asyncio.run`` without touching this thread's event-loop setting."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(main)
    finally:
        try:
            _cancel_all_tasks(loop)
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            loop.close()


def _cancel_all_tasks(loop: asyncio.AbstractEventLoop) -> None:
    pending = asyncio.all_tasks(loop)
    if not pending:
        return
    for task in pending:
        task.cancel()
    loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    for task in pending:
        if not task.cancelled() and task.exception() is not None:
            loop.call_exception_handler(
                {
                    "message": "unhandled exception while ask_blocking shut down",
                    "exception": task.exception(),
                    "task": task,
                }
            )


class UserQuestionService:
    """``ctx.user_questions``: asking, the provider registration, strict answer checking."""

    __slots__ = ("_native",)

    def __init__(self, native: _native.UserQuestionService) -> None:
        self._native = native

    async def ask(self, request: Request) -> Answer:
        """Asks the registered provider and returns the answer dict.

        Runs the checks of SPEC §3 in order (the provider is not reached when one fails) and
        raises :class:`UserQuestionError` with the failing code. Cancelling the awaiting
        task (``task.cancel()``, ``asyncio.timeout``, ``wait_for``) withdraws the ask: the
        provider's signal fires and its task is cancelled.
        """
        if not isinstance(request, (dict, str)) and isinstance(request, Mapping):
            request = dict(request)
        return await self._native.ask(request)

    def ask_blocking(self, request: Request) -> Answer:
        """:meth:`ask` for synchronous hosts: blocks this thread until the ask settles.

        Runs a private event loop on this thread for the wait (an async provider with no
        running home loop runs on it). Called on a thread that runs an event loop it raises
        :class:`EventLoopThreadError` at once (a ``UserQuestionError`` with code
        ``INVALID_ARGUMENT`` that is also a ``RuntimeError``) instead of deadlocking.
        """
        if _running_loop() is not None:
            raise EventLoopThreadError(
                "ask_blocking cannot be called from a thread that runs an event loop; "
                "await ask() instead"
            )
        return _run_on_private_loop(self.ask(request))

    def register_provider(
        self, provider: Union[Provider, QuestionInbox, AutoResponder, TerminalProvider]
    ) -> ProviderRegistration:
        """Registers the one provider of this context.

        A :class:`QuestionInbox`, :class:`AutoResponder` or :class:`TerminalProvider` is
        served natively: its asks never run Python code.

        Raises ``DUPLICATE_PROVIDER`` while another is registered. The registration is
        callable (disposes), has ``dispose()`` and is a context manager; disposing settles
        its waiting asks ``ASK_ABORTED``. The event loop running here (if any) becomes the
        provider's home loop: awaitables its ``ask`` returns run there while it runs.
        """
        return self._native.register_provider(provider)

    @property
    def has_provider(self) -> bool:
        """Whether a provider is registered."""
        return self._native.has_provider

    @property
    def strict(self) -> bool:
        """Strict answer checking: every provider answer is checked (SPEC §6). Off by default."""
        return self._native.strict

    @strict.setter
    def strict(self, strict: bool) -> None:
        self._native.strict = strict


class Context:
    """An agent registry and the user-questions service that checks against it.

    A context manager: leaving the ``with`` block (or :meth:`close`) disposes the provider,
    settling waiting asks ``ASK_ABORTED``; later asks fail ``NO_PROVIDER``. Collecting the
    context does the same.
    """

    __slots__ = ("_native", "_user_questions")

    def __init__(self) -> None:
        self._native = _native.Context()
        self._user_questions = UserQuestionService(self._native.user_questions)

    @property
    def user_questions(self) -> UserQuestionService:
        """The user-questions service."""
        return self._user_questions

    @property
    def agents(self) -> AgentRegistry:
        """The live agents: ``enter(agent, owner=None)`` → detach callable, ``get``,
        ``roots``, ``list``."""
        return self._native.agents

    def close(self) -> None:
        """Disposes the provider, settling waiting asks ``ASK_ABORTED``. Idempotent."""
        self._native.close()

    def __enter__(self) -> Context:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


_DEFINITION: Dict[str, Any] = _native.tool_definition()


class AskUserQuestionTool:
    """The model-facing tool ``ask_user_question`` (SPEC §9) over a context."""

    __slots__ = ("_service",)

    #: ``"ask_user_question"``.
    name: str = _DEFINITION["name"]
    #: What the model reads.
    description: str = _DEFINITION["description"]

    def __init__(self, ctx: Context) -> None:
        self._service = ctx.user_questions._native

    @property
    def parameters(self) -> Dict[str, Any]:
        """The JSON Schema of the arguments (a fresh dict)."""
        return _native.tool_definition()["parameters"]  # type: ignore[no-any-return]

    @property
    def definition(self) -> Dict[str, Any]:
        """``{"name", "description", "parameters"}`` (a fresh dict)."""
        return _native.tool_definition()

    async def execute(
        self,
        args: Union[Mapping[str, Any], str],
        agent: Optional[Agent] = None,
        signal: Optional[AbortSignal] = None,
    ) -> ToolResult:
        """Asks with the tool's arguments (a dict, or JSON text) and returns the tool result:
        ``{"isError": False, "value": answer, "content": [...]}`` or ``{"isError": True,
        "error": {"name", "code", "message"}, "content": [...]}``. Never raises for a seam
        error; cancelling the awaiting task withdraws the ask."""
        if not isinstance(args, (dict, str)) and isinstance(args, Mapping):
            args = dict(args)
        return await self._service.execute_tool(args, agent, signal)
