"""The context, its user-questions service and the model-facing tool: thin typed wrappers
over the native module."""

from __future__ import annotations

import os
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Awaitable, Dict, Mapping, Optional, Protocol, Union, cast

from . import _native
from ._blocking import run_blocking
from ._native import (
    AbortSignal,
    Agent,
    AgentRegistry,
    AutoResponder,
    ProviderRegistration,
    QuestionInbox,
    RemoteProvider,
    TerminalProvider,
    WebProvider,
)
from ._types import (
    Answer,
    PlanReview,
    ProviderRequest,
    Request,
    ToolDefinition,
    ToolResult,
)

__all__ = ["AskUserQuestionTool", "Context", "Provider", "UserQuestionService"]

#: What ``ask`` accepts: a request dict (or any mapping), or JSON text ``{"questions": [...]}``.
RequestLike = Union[Request, Mapping[str, Any], str]


class Provider(Protocol):
    """What ``register_provider`` accepts: an object with an ``ask(request)`` method.

    ``request`` is ``{"questions": [...], "agent": Agent (only when one asked), "signal":
    AbortSignal}``. ``ask`` runs with the GIL on the asking thread and returns the answer
    dict, or an awaitable of it (run as a task on the loop that was running where the
    provider was registered, while it runs, else on the asker's loop; cancelled when the ask
    is withdrawn). Raising ``UserQuestionError`` passes its code through; any other exception
    settles the ask ``PROVIDER_FAILED`` with the exception's message. An interrupt
    (``KeyboardInterrupt``, ``SystemExit``) raised as the ask starts withdraws the ask
    (``ASK_ABORTED``) and propagates to the asker.
    """

    def ask(
        self, request: ProviderRequest
    ) -> Union[Mapping[str, Any], Awaitable[Mapping[str, Any]]]: ...


def _plain(request: Any) -> Any:
    """A mapping that is not a dict, as a dict (the native side reads dicts)."""
    if not isinstance(request, (dict, str)) and isinstance(request, Mapping):
        return dict(request)
    return request


async def _outcome(outcome: Union[Dict[str, Any], _native._PendingAsk]) -> Dict[str, Any]:
    """What a native asking method gave: the outcome dict at once, or a pending ask's,
    awaited; an await that ends by an exception (the task cancelled, the coroutine closed)
    withdraws the ask first (§4). (`ask`, the hot path, does the same inline: one coroutine
    less per ask.)"""
    if isinstance(outcome, dict):
        return outcome
    settled: Dict[str, Any] = await _settled(outcome)
    return settled


async def _settled(pending: _native._PendingAsk) -> Any:
    """A pending native call's outcome, awaited; an await that ends by an exception (the task
    cancelled, the coroutine closed) withdraws it first."""
    try:
        return await pending.future
    except BaseException:
        pending.withdraw()
        # The exception's traceback keeps this frame: without the pending ask in it, nothing
        # loops back to the exception, and all of it is freed as soon as it is dropped.
        del pending
        raise


class UserQuestionService:
    """``ctx.user_questions``: asking, the provider registration, strict answer checking."""

    __slots__ = ("_native",)

    def __init__(self, native: _native.UserQuestionService) -> None:
        self._native = native

    async def ask(self, request: RequestLike) -> Answer:
        """Asks the registered provider and returns the answer dict.

        Runs the checks of docs/reference.md §3 in order (the provider is not reached when
        one fails) and raises :class:`UserQuestionError` with the failing code. Cancelling
        the awaiting task (``task.cancel()``, ``asyncio.timeout``, ``wait_for``) withdraws
        the ask: the provider's signal fires and its task is cancelled.
        """
        outcome = self._native.ask(request if type(request) is dict else _plain(request))
        # (No `cast()` here: it is a call, and this is every ask's path.)
        if isinstance(outcome, dict):  # settled at once
            return outcome  # type: ignore[return-value]
        try:
            return await outcome.future  # type: ignore[return-value]
        except BaseException:
            # The task was cancelled (or this coroutine closed): withdraw before it goes on;
            # and drop the pending ask from this frame, which the traceback keeps (`_outcome`).
            outcome.withdraw()
            del outcome
            raise

    def ask_blocking(self, request: RequestLike) -> Answer:
        """:meth:`ask` for synchronous hosts: blocks this thread until the ask settles.

        The provider is called with this thread's private event loop marked running (an
        async provider with no running home loop runs on it); an ask that settled at once
        returns (or raises) without running it, otherwise the loop runs until the ask
        settles. The loop is kept for the thread's next call while nothing is left on it,
        and closed when the thread ends. Called on a thread that runs an event loop it
        raises :class:`EventLoopThreadError` at once (a ``UserQuestionError`` with code
        ``INVALID_ARGUMENT`` that is also a ``RuntimeError``) instead of deadlocking.
        """
        return cast(Answer, run_blocking("ask_blocking", self._native.ask, _plain(request)))

    async def review_plan(
        self,
        plan: str,
        *,
        agent: Optional[Agent] = None,
        signal: Optional[AbortSignal] = None,
        timeout: Optional[float] = None,
        question: Optional[str] = None,
    ) -> PlanReview:
        """Asks the user to review ``plan`` (markdown) and returns ``{"decision": "approved" |
        "revise" | "rejected" | "dismissed", "feedback"?: str}`` (§17).

        One plan-review question (``question``, default ``"Approve this plan?"``, with the
        options Approve, Revise and Reject) goes through :meth:`ask` with all its checks and
        guarantees; free text is ``revise`` with that ``feedback``, a skip is ``dismissed``.
        An empty plan raises ``INVALID_REQUEST`` (``review_plan requires a plan``).
        ``timeout`` is in seconds, as in a request.
        """
        outcome = self._native.review_plan(plan, agent, signal, timeout, question)
        return cast(PlanReview, await _outcome(outcome))

    def review_plan_blocking(
        self,
        plan: str,
        *,
        agent: Optional[Agent] = None,
        signal: Optional[AbortSignal] = None,
        timeout: Optional[float] = None,
        question: Optional[str] = None,
    ) -> PlanReview:
        """:meth:`review_plan` for synchronous hosts, on this thread's private loop, like
        :meth:`ask_blocking`."""
        return cast(
            PlanReview,
            run_blocking(
                "review_plan_blocking",
                self._native.review_plan,
                plan,
                agent,
                signal,
                timeout,
                question,
            ),
        )

    def register_provider(
        self,
        provider: Union[
            Provider,
            QuestionInbox,
            AutoResponder,
            TerminalProvider,
            WebProvider,
            RemoteProvider,
        ],
    ) -> ProviderRegistration:
        """Registers the one provider of this context.

        A :class:`QuestionInbox`, :class:`AutoResponder`, :class:`TerminalProvider`,
        :class:`WebProvider` or :class:`RemoteProvider` is served natively: its asks never
        run Python code.

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

    def __init__(self, journal: Union[str, os.PathLike[str], None] = None) -> None:
        """``journal``: a file every ask of this context is recorded in (JSON Lines, appended,
        §18). A journal that cannot be written never fails or delays an ask; its first write
        error is reported once, as a ``RuntimeWarning``."""
        self._native = _native.Context(journal)
        self._user_questions = UserQuestionService(self._native.user_questions)

    if TYPE_CHECKING:

        @property
        def user_questions(self) -> UserQuestionService:
            """The user-questions service."""

    else:
        # A property whose getter is C (`attrgetter`), not a Python frame: it is read on
        # every `ctx.user_questions.ask(...)`.
        user_questions = property(attrgetter("_user_questions"), doc="The user-questions service.")

    @property
    def agents(self) -> AgentRegistry:
        """The live agents: ``enter(agent, owner=None)`` → detach handle (callable, and a
        context manager), ``get``, ``roots``, ``list``."""
        return self._native.agents

    def close(self) -> None:
        """Disposes the provider, settling waiting asks ``ASK_ABORTED``. Idempotent."""
        self._native.close()

    def __enter__(self) -> Context:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


_DEFINITION = cast(ToolDefinition, _native.tool_definition())


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
        return self.definition["parameters"]

    @property
    def definition(self) -> ToolDefinition:
        """``{"name", "description", "parameters"}`` (a fresh dict)."""
        return cast(ToolDefinition, _native.tool_definition())

    async def execute(
        self,
        args: Union[Mapping[str, Any], str],
        agent: Optional[Agent] = None,
        signal: Optional[AbortSignal] = None,
        timeout: Optional[float] = None,
        key: Optional[str] = None,
    ) -> ToolResult:
        """Asks with the tool's arguments (a dict, or JSON text) and returns the tool result:
        ``{"isError": False, "value": answer, "content": [...]}`` or ``{"isError": True,
        "error": {"name", "code", "message"}, "content": [...]}``. Never raises for a seam
        error; cancelling the awaiting task withdraws the ask. ``timeout`` (seconds) and
        ``key`` come from the caller, never from the model's arguments (§16): at the deadline
        the result is the failure form with ``ASK_TIMED_OUT``."""
        outcome = self._service.execute_tool(_plain(args), agent, signal, timeout, key)
        return cast(ToolResult, await _outcome(outcome))
