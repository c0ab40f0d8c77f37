"""user-questions: the one place where an AI agent stops a tool call and asks the human.

An asker awaits ``ctx.user_questions.ask({"questions": [...], "agent": a, "signal": s})``;
exactly one provider per :class:`Context` (any object with an ``ask(request)`` method, a
:class:`QuestionInbox`, an :class:`AutoResponder`, a :class:`TerminalProvider`) shows the
questions and returns the answer. The seam validates every request before a provider sees
it, admits only the exact live runtime-root agent, and settles every ask exactly once. The
behaviour is the Rust core's (docs/reference.md); this package is a thin asyncio-native layer over it.
"""

from __future__ import annotations

import asyncio
import atexit
import contextvars
import os
import threading
from typing import (
    Any,
    Awaitable,
    Dict,
    List,
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

#: Every error code name → its number (§10; the numbers are the C ABI's).
CODES: Dict[str, int] = dict(_native.CODES)

#: A question, an answer, a tool result: plain dicts with the wire keys of §2.
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


_running_loop = asyncio._get_running_loop
_set_running_loop = asyncio._set_running_loop


class _PrivateLoop:
    """A thread's private event loop for ``ask_blocking``, kept between calls while it is
    idle. Closed when its thread ends (the thread-local holding it goes), at interpreter exit
    (main thread), or as soon as a call leaves anything on it (see ``_tidy``)."""

    __slots__ = ("loop", "pid")

    def __init__(self) -> None:
        self.loop: Optional[asyncio.AbstractEventLoop] = asyncio.new_event_loop()
        self.pid = os.getpid()

    def close(self) -> None:
        loop, self.loop = self.loop, None
        if loop is None or loop.is_closed():
            return
        if self.pid != os.getpid():
            # Inherited through fork: its selector is shared with the parent, and closing it
            # would unregister the parent's descriptors. Keep it (unused) instead.
            _FORKED_LOOPS.append(loop)
            return
        loop.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # pragma: no cover - interpreter teardown
            pass


_local = threading.local()
_FORKED_LOOPS: List[asyncio.AbstractEventLoop] = []


def _private_loop() -> asyncio.AbstractEventLoop:
    holder: Optional[_PrivateLoop] = getattr(_local, "holder", None)
    if holder is None or holder.loop is None:
        holder = _local.holder = _PrivateLoop()
    assert holder.loop is not None
    return holder.loop


def _discard_private_loop() -> None:
    """Drops this thread's private loop (closing it, unless inherited through fork)."""
    holder: Optional[_PrivateLoop] = getattr(_local, "holder", None)
    _local.holder = None
    if holder is not None:
        holder.close()


atexit.register(_discard_private_loop)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_discard_private_loop)


def _is_idle(loop: asyncio.AbstractEventLoop) -> bool:
    """Nothing ready, scheduled, watched (beyond the loop's own self-pipe) or started on
    ``loop``: it can serve the next call as if new. (Private attributes of asyncio's selector
    loop; a loop without them is never reused.)"""
    selector = getattr(loop, "_selector", None)
    return (
        not getattr(loop, "_ready", True)
        and not getattr(loop, "_scheduled", True)
        and getattr(loop, "_default_executor", True) is None
        and not getattr(loop, "_asyncgens", True)
        and selector is not None
        and len(selector.get_map()) <= 1
    )


def _tidy(loop: asyncio.AbstractEventLoop, ran: bool) -> None:
    """After an ``ask_blocking`` call: keep this thread's loop when the call left nothing on
    it, else shut it down as ``asyncio.run`` would (cancel its tasks, finish async generators
    and the default executor, close) and start afresh next time."""
    closed = loop.is_closed()  # by the provider
    if not closed and _is_idle(loop) and not (ran and asyncio.all_tasks(loop)):
        return
    holder: Optional[_PrivateLoop] = getattr(_local, "holder", None)
    if holder is not None and holder.loop is loop:
        _local.holder = None
        holder.loop = None
    if not closed:
        _shut_down(loop)


def _shut_down(loop: asyncio.AbstractEventLoop) -> None:
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


def _wait(loop: asyncio.AbstractEventLoop, future: "asyncio.Future[_T]") -> _T:
    """Runs ``loop`` until ``future`` is done. Interrupted (``KeyboardInterrupt``, ...), the
    ask is withdrawn: the future is cancelled and its done-callbacks run."""
    try:
        return loop.run_until_complete(future)
    finally:
        if not future.done():
            future.cancel()
            loop.call_soon(loop.stop)
            loop.run_forever()


class UserQuestionService:
    """``ctx.user_questions``: asking, the provider registration, strict answer checking."""

    __slots__ = ("_native",)

    def __init__(self, native: _native.UserQuestionService) -> None:
        self._native = native

    async def ask(self, request: Request) -> Answer:
        """Asks the registered provider and returns the answer dict.

        Runs the checks of §3 in order (the provider is not reached when one fails) and
        raises :class:`UserQuestionError` with the failing code. Cancelling the awaiting
        task (``task.cancel()``, ``asyncio.timeout``, ``wait_for``) withdraws the ask: the
        provider's signal fires and its task is cancelled.
        """
        if not isinstance(request, (dict, str)) and isinstance(request, Mapping):
            request = dict(request)
        outcome = self._native.ask(request)
        if isinstance(outcome, dict):  # settled at once
            return outcome
        return await outcome

    def ask_blocking(self, request: Request) -> Answer:
        """:meth:`ask` for synchronous hosts: blocks this thread until the ask settles.

        The provider is called with this thread's private event loop marked running (an
        async provider with no running home loop runs on it); an ask that settled at once
        returns (or raises) without running it, otherwise the loop runs until the ask
        settles. The loop is kept for the thread's next call while nothing is left on it,
        and closed when the thread ends. Called on a thread that runs an event loop it
        raises :class:`EventLoopThreadError` at once (a ``UserQuestionError`` with code
        ``INVALID_ARGUMENT`` that is also a ``RuntimeError``) instead of deadlocking.
        """
        if _running_loop() is not None:
            raise EventLoopThreadError(
                "ask_blocking cannot be called from a thread that runs an event loop; "
                "await ask() instead"
            )
        if not isinstance(request, (dict, str)) and isinstance(request, Mapping):
            request = dict(request)
        loop = _private_loop()
        ran = False
        try:
            _set_running_loop(loop)
            try:
                # In a copy of the context, as a task would run it.
                outcome = contextvars.copy_context().run(self._native.ask, request)
            finally:
                _set_running_loop(None)
            if isinstance(outcome, dict):  # settled at once
                return outcome
            ran = True
            return _wait(loop, outcome)
        finally:
            _tidy(loop, ran)

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
        """Strict answer checking: every provider answer is checked (§6). Off by default."""
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
    """The model-facing tool ``ask_user_question`` (§9) over a context."""

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
        outcome = self._service.execute_tool(args, agent, signal)
        if isinstance(outcome, dict):  # settled at once
            return outcome
        return await outcome
