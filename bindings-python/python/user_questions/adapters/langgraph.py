"""LangGraph (§21): ``ask_user_question`` as a tool whose ask survives a checkpointed interrupt.

:func:`ask_user_question_tool` returns a LangChain ``StructuredTool`` with §9's name,
description and argument schema. Run inside a graph node (directly, or through a
``ToolNode``), it

1. checks the arguments with the seam's own checks (well-formedness, at least one question,
   duplicate ids and labels — the core's messages, §3) and returns §9's failure result when
   they fail, without interrupting;
2. calls ``langgraph.types.interrupt({"kind": "ask_user_question", "questions": [...]})``
   with the questions as the seam accepted them (``multi_select`` → ``multiSelect``), so the
   graph stops and its checkpointer keeps the questions;
3. on resume, checks the resume value by §6 and returns §9's result: the success form for an
   answer that fits, the failure form with ``BAD_ANSWER`` (and the reason) for one that does
   not, or the failure form with the code carried by an error resume (see below).

:func:`answer_interrupt` (and :func:`answer_interrupt_blocking`) answers a pending interrupt
through any provider registered on a :class:`~user_questions.Context` — an ``AutoResponder``,
the ``TerminalProvider``, a web page or a hub — and returns the ``Command(resume=...)`` to
invoke the graph with. A seam failure (the user cancelled, a deadline passed, no provider)
becomes the resume value ``{"error": {"name", "code", "message"}}``, which the tool returns
as §9's failure form with that code.

Needs ``pip install user-questions[langgraph]``; the package never imports LangGraph until
this module is imported.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union, cast

from langchain_core.tools import StructuredTool
from langgraph.types import Command, Interrupt, interrupt

from .. import _native
from .._blocking import _running_loop, run_blocking
from .._context import Context, UserQuestionService
from .._errors import EventLoopThreadError, UserQuestionError
from .._native import AbortSignal, Agent
from .._types import Answer, ToolFailure, ToolResult, ToolSuccess

__all__ = [
    "FOR_QUESTIONS",
    "INTERRUPT_KIND",
    "answer_interrupt",
    "answer_interrupt_blocking",
    "ask_user_question_tool",
    "check_arguments",
    "is_question_interrupt",
    "question_interrupts",
    "resume_result",
]

#: The ``kind`` of the interrupt value the tool raises.
INTERRUPT_KIND = "ask_user_question"

#: The key by which a resume value made by :func:`answer_interrupt` names the questions it
#: answers (a digest of them): LangGraph matches the resume values of one task to its
#: interrupts by call order, which is not stable for calls run in parallel (a ``ToolNode``
#: running several ``ask_user_question`` calls of one model turn), so a value can reach the
#: other call; the tool refuses a value addressed to other questions instead of taking it.
FOR_QUESTIONS = "forQuestions"


def _digest(questions: Any) -> str:
    text = json.dumps(questions, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_DEFINITION = _native.tool_definition()


class _Capture:
    """A provider that keeps the questions the seam accepted and skips them."""

    __slots__ = ("questions",)

    def __init__(self) -> None:
        self.questions: List[Dict[str, Any]] = []

    def ask(self, request: Mapping[str, Any]) -> Answer:
        self.questions = list(request["questions"])
        return {"answers": [{"id": q["id"], "selected": []} for q in self.questions]}


def _start_check(args: Any) -> Any:
    ctx = Context()
    capture = _Capture()
    ctx.user_questions.register_provider(capture)
    outcome = ctx.user_questions._native.execute_tool(args)
    return ctx, capture, outcome


def check_arguments(
    args: Union[Mapping[str, Any], str],
) -> Union[List[Dict[str, Any]], ToolFailure]:
    """The tool's arguments (a dict or JSON text) → the questions as the seam accepts them,
    or §9's failure result (``INVALID_REQUEST``, ``EMPTY_QUESTIONS``, …) when a check fails.

    The checks are the seam's own: the arguments are executed as the tool on a private context
    whose provider only records the questions (no person is asked, nothing is journaled).
    Callable with or without a running event loop."""
    if isinstance(args, Mapping):
        args = dict(args)
    if _running():
        # The recording provider answers inside the call, so the ask settles at once.
        ctx, capture, outcome = _start_check(args)
    else:
        holder: Dict[str, Any] = {}

        def start() -> Any:
            holder["ctx"], holder["capture"], outcome = _start_check(args)
            return outcome

        outcome = run_blocking("check_arguments", start)
        ctx, capture = holder["ctx"], holder["capture"]
    try:
        if not isinstance(outcome, dict):  # pragma: no cover - the capture answers at once
            raise RuntimeError("the argument check did not settle at once")
        if outcome["isError"]:
            return cast(ToolFailure, outcome)
        return list(capture.questions)
    finally:
        ctx.close()


def _running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _failure(code: str, message: str) -> ToolFailure:
    return cast(
        ToolFailure,
        {
            "isError": True,
            "error": {"name": "UserQuestionError", "code": code, "message": message},
            "content": [{"type": "text", "text": f"Error: {message}"}],
        },
    )


def _success(answer: Mapping[str, Any]) -> ToolSuccess:
    items = []
    for item in answer["answers"]:
        out: Dict[str, Any] = {"id": item["id"], "selected": list(item["selected"])}
        if item.get("custom") is not None:
            out["custom"] = item["custom"]
        items.append(out)
    value = cast(Answer, {"answers": items})
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return {"isError": False, "value": value, "content": [{"type": "text", "text": text}]}


def _error_resume(value: Any) -> Optional[ToolFailure]:
    """``{"error": {"code", "message"}}`` with a known code → the failure form, else None."""
    if not isinstance(value, Mapping) or "answers" in value:
        return None
    error = value.get("error")
    if not isinstance(error, Mapping):
        return None
    code, message = error.get("code"), error.get("message")
    # (A code that is not a string, a list say, is no code: checked as an answer.)
    if (
        isinstance(code, str)
        and code in _native.CODES
        and code != "OK"
        and isinstance(message, str)
    ):
        return _failure(code, message)
    return None


def resume_result(questions: Sequence[Mapping[str, Any]], value: Any) -> ToolResult:
    """§9's result for the resume value of an ``ask_user_question`` interrupt: an answer is
    checked by §6 (``BAD_ANSWER`` with the reason when it does not fit); an error resume
    ``{"error": {"code", "message"}}`` with a code of §10 gives the failure form with it. A
    value that names the questions it answers (:data:`FOR_QUESTIONS`, as
    :func:`answer_interrupt` makes it) and names others is ``BAD_ANSWER``: it was given for
    another call."""
    if isinstance(value, Mapping) and FOR_QUESTIONS in value:
        if value[FOR_QUESTIONS] != _digest(list(questions)):
            return _failure(
                "BAD_ANSWER",
                "the resume value answers another ask_user_question call's questions "
                "(LangGraph matches resume values to the interrupts of one task by call order, "
                "which parallel tool calls change: run ask_user_question calls one at a time)",
            )
        value = {k: v for k, v in value.items() if k != FOR_QUESTIONS}
    failure = _error_resume(value)
    if failure is not None:
        return failure
    try:
        _native.validate_answer(list(questions), value)
    except UserQuestionError as error:
        return _failure(error.code, error.message)
    return _success(value)


def _run(**args: Any) -> ToolResult:
    checked = check_arguments(args)
    if isinstance(checked, dict):
        return checked
    value = interrupt({"kind": INTERRUPT_KIND, "questions": checked})
    return resume_result(checked, value)


async def _arun(**args: Any) -> ToolResult:
    return _run(**args)


def ask_user_question_tool() -> StructuredTool:
    """``ask_user_question`` (§9) as a LangChain tool for LangGraph: it interrupts the graph
    with the checked questions and returns §9's result when the graph is resumed. The graph
    needs a checkpointer (``interrupt`` does)."""
    return StructuredTool.from_function(
        func=_run,
        coroutine=_arun,
        name=_DEFINITION["name"],
        description=_DEFINITION["description"],
        args_schema=_DEFINITION["parameters"],
    )


def is_question_interrupt(item: Any) -> bool:
    """Whether an ``Interrupt`` (or its value) was raised by the tool."""
    value = item.value if isinstance(item, Interrupt) else item
    return (
        isinstance(value, Mapping)
        and value.get("kind") == INTERRUPT_KIND
        and isinstance(value.get("questions"), list)
    )


def _service(ctx: Union[Context, UserQuestionService]) -> UserQuestionService:
    return ctx.user_questions if isinstance(ctx, Context) else ctx


def _request(
    item: Any,
    agent: Optional[Agent],
    signal: Optional[AbortSignal],
    timeout: Optional[float],
    key: Optional[str],
) -> Dict[str, Any]:
    if not is_question_interrupt(item):
        raise UserQuestionError(
            "the interrupt was not raised by ask_user_question "
            '(its value must be {"kind": "ask_user_question", "questions": [...]})',
            "INVALID_REQUEST",
        )
    value = item.value if isinstance(item, Interrupt) else item
    request: Dict[str, Any] = {"questions": value["questions"]}
    if agent is not None:
        request["agent"] = agent
    if signal is not None:
        request["signal"] = signal
    if timeout is not None:
        request["timeout"] = timeout
    if key is None and isinstance(item, Interrupt) and item.id:
        key = item.id
    if key is not None:
        request["key"] = key
    return request


def _command(item: Any, resume: Any) -> Command[Any]:
    # The resume value names the questions it answers (see FOR_QUESTIONS).
    value = item.value if isinstance(item, Interrupt) else item
    if isinstance(resume, dict):
        resume = {**resume, FOR_QUESTIONS: _digest(value["questions"])}
    if isinstance(item, Interrupt) and item.id:
        return Command(resume={item.id: resume})
    return Command(resume=resume)


def _error_value(error: UserQuestionError) -> Dict[str, Any]:
    return {"error": {"name": "UserQuestionError", "code": error.code, "message": error.message}}


async def answer_interrupt(
    item: Union[Interrupt, Mapping[str, Any]],
    ctx: Union[Context, UserQuestionService],
    *,
    agent: Optional[Agent] = None,
    signal: Optional[AbortSignal] = None,
    timeout: Optional[float] = None,
    key: Optional[str] = None,
) -> Command[Any]:
    """Asks the questions of a pending ``ask_user_question`` interrupt through the provider of
    ``ctx`` and returns ``Command(resume=...)`` (addressed to the interrupt's id when given an
    ``Interrupt``). The ask's ``key`` defaults to the interrupt's id, so a hub (§20) resumes
    the same question when the answering process restarts. A seam failure becomes an error
    resume, which the tool returns as §9's failure form; cancelling the awaiting task
    withdraws the ask and raises as usual."""
    request = _request(item, agent, signal, timeout, key)
    try:
        answer: Any = await _service(ctx).ask(request)
    except UserQuestionError as error:
        answer = _error_value(error)
    return _command(item, answer)


def answer_interrupt_blocking(
    item: Union[Interrupt, Mapping[str, Any]],
    ctx: Union[Context, UserQuestionService],
    *,
    agent: Optional[Agent] = None,
    signal: Optional[AbortSignal] = None,
    timeout: Optional[float] = None,
    key: Optional[str] = None,
) -> Command[Any]:
    """:func:`answer_interrupt` for synchronous hosts (``ask_blocking``). Called on a thread
    that runs an event loop it raises :class:`~user_questions.EventLoopThreadError` at once,
    like ``ask_blocking``: a misuse, not an ask that failed (no resume value is made)."""
    if _running_loop() is not None:
        raise EventLoopThreadError(
            "answer_interrupt_blocking cannot be called from a thread that runs an event loop; "
            "await answer_interrupt() instead"
        )
    request = _request(item, agent, signal, timeout, key)
    try:
        answer: Any = _service(ctx).ask_blocking(request)
    except UserQuestionError as error:
        answer = _error_value(error)
    return _command(item, answer)


def question_interrupts(interrupts: Iterable[Any]) -> List[Interrupt]:
    """The ``ask_user_question`` interrupts among ``interrupts`` (``result["__interrupt__"]``
    or ``graph.get_state(config).interrupts``)."""
    return [i for i in interrupts if isinstance(i, Interrupt) and is_question_interrupt(i)]
