"""Typed shapes of the wire data (docs/reference.md §2, §7, §9, §10): plain dicts at run
time, ``TypedDict``s for type checkers. Optional keys are absent when unset, never None."""

from __future__ import annotations

from typing import Any, Dict, List, Literal, TypedDict, Union

from ._native import AbortSignal, Agent

__all__ = [
    "Answer",
    "AnswerItem",
    "CodeName",
    "Decision",
    "ExtendedEvent",
    "InboxEvent",
    "Intent",
    "Item",
    "Option",
    "Outcome",
    "PendingQuestion",
    "PlanReview",
    "ProviderRequest",
    "Request",
    "RequestedEvent",
    "ResolvedEvent",
    "Respondent",
    "TextContent",
    "ToolDefinition",
    "ToolError",
    "ToolFailure",
    "ToolResult",
    "ToolSuccess",
]

#: The stable error code names (§10), in number order; ``CODES`` maps each to its number.
CodeName = Literal[
    "OK",
    "ASK_ABORTED",
    "EMPTY_QUESTIONS",
    "CALLER_NOT_LIVE",
    "DELEGATED_CALLER",
    "BAD_INTENT",
    "NO_PROVIDER",
    "DUPLICATE_PROVIDER",
    "ASK_CANCELLED",
    "INVALID_REQUEST",
    "BAD_ANSWER",
    "PROVIDER_FAILED",
    "NOT_PENDING",
    "ALREADY_RESOLVED",
    "AGENT_EXISTS",
    "INVALID_ARGUMENT",
    "INTERNAL",
    "ASK_TIMED_OUT",
]

#: How an inbox question was resolved (§7).
Outcome = Literal["answered", "cancelled", "aborted", "failed", "timed_out"]

#: A plan review's decision (§17).
Decision = Literal["approved", "revise", "rejected", "dismissed"]


class _OptionRequired(TypedDict):
    label: str


class Option(_OptionRequired, total=False):
    """``{"label", "description"?}``."""

    description: str


class Intent(TypedDict):
    """``{"kind", "approve"}``: ``kind`` ``"plan-review"`` (others are accepted)."""

    kind: str
    approve: str


class _ItemRequired(TypedDict):
    id: str
    question: str


class Item(_ItemRequired, total=False):
    """A question: ``{"id", "question", "detail"?, "header"?, "options"?, "multiSelect"?,
    "intent"?}``."""

    detail: str
    header: str
    options: List[Option]
    multiSelect: bool
    intent: Intent


class _AnswerItemRequired(TypedDict):
    id: str
    selected: List[str]


class AnswerItem(_AnswerItemRequired, total=False):
    """``{"id", "selected", "custom"?}``."""

    custom: str


class Respondent(TypedDict):
    """Who answered (§23): ``{"id", "name"}``, the person a server knew."""

    id: str
    name: str


class _AnswerRequired(TypedDict):
    answers: List[AnswerItem]


class Answer(_AnswerRequired, total=False):
    """``{"answers": [...], "respondent"?}``: one item per question, in order; then who
    answered, when the server that took the answer knew the person (§23)."""

    respondent: Respondent


class _RequestRequired(TypedDict):
    questions: List[Item]


class Request(_RequestRequired, total=False):
    """What an asker passes to ``ask``: ``{"questions", "agent"?, "signal"?, "timeout"?,
    "key"?, "to"?}``. ``timeout``: seconds (0.001 to 2147483.647, rounded to whole
    milliseconds) from when the provider is reached; then the ask settles ``ASK_TIMED_OUT``.
    ``key``: a resumable key, 1 to 256 characters. ``to``: who is to answer (§23), 1 to 32
    person ids or group names of 1 to 64 characters."""

    agent: Agent
    signal: AbortSignal
    timeout: float
    key: str
    to: List[str]


class _ProviderRequestRequired(TypedDict):
    questions: List[Item]
    signal: AbortSignal


class ProviderRequest(_ProviderRequestRequired, total=False):
    """What a provider's ``ask`` receives: ``{"questions", "agent"? (only when one asked),
    "signal", "expiresAt"?, "key"?, "to"?}``; the signal fires when the ask is withdrawn
    (also at its deadline, ``expiresAt``: RFC 3339 UTC with milliseconds)."""

    agent: Agent
    expiresAt: str
    key: str
    to: List[str]


class _PendingQuestionRequired(TypedDict):
    ticket: int
    questions: List[Item]


class PendingQuestion(_PendingQuestionRequired, total=False):
    """A question waiting in a ``QuestionInbox``: ``{"ticket", "questions", "agentId"?,
    "askedAt", "expiresAt"?, "key"?, "to"?}`` (times: RFC 3339 UTC with milliseconds)."""

    agentId: str
    askedAt: str
    expiresAt: str
    key: str
    to: List[str]


class _RequestedEventRequired(TypedDict):
    type: Literal["requested"]
    ticket: int
    questions: List[Item]


class RequestedEvent(_RequestedEventRequired, total=False):
    """``{"type": "requested", "ticket", "questions", "agentId"?, "askedAt", "expiresAt"?,
    "key"?, "to"?}``: a new pending question."""

    agentId: str
    askedAt: str
    expiresAt: str
    key: str
    to: List[str]


class _ResolvedEventRequired(TypedDict):
    type: Literal["resolved"]
    ticket: int
    outcome: Outcome


class ResolvedEvent(_ResolvedEventRequired, total=False):
    """``{"type": "resolved", "ticket", "outcome", "by"?}``: ``by`` is who answered or
    cancelled, when the person was known (§23)."""

    by: Respondent


class ExtendedEvent(TypedDict):
    """``{"type": "extended", "ticket", "expiresAt"}``: someone gave the user more time."""

    type: Literal["extended"]
    ticket: int
    expiresAt: str


#: What an inbox subscriber receives.
InboxEvent = Union[RequestedEvent, ResolvedEvent, ExtendedEvent]


class _PlanReviewRequired(TypedDict):
    decision: Decision


class PlanReview(_PlanReviewRequired, total=False):
    """The outcome of ``review_plan``: ``{"decision", "feedback"?}``."""

    feedback: str


class TextContent(TypedDict):
    """``{"type": "text", "text"}``."""

    type: Literal["text"]
    text: str


class ToolError(TypedDict):
    """``{"name": "UserQuestionError", "code", "message"}``."""

    name: Literal["UserQuestionError"]
    code: CodeName
    message: str


class ToolSuccess(TypedDict):
    """``{"isError": False, "value": answer, "content": [text]}``."""

    isError: Literal[False]
    value: Answer
    content: List[TextContent]


class ToolFailure(TypedDict):
    """``{"isError": True, "error": {...}, "content": [text]}``."""

    isError: Literal[True]
    error: ToolError
    content: List[TextContent]


#: The result of ``AskUserQuestionTool.execute`` (§9).
ToolResult = Union[ToolSuccess, ToolFailure]


class ToolDefinition(TypedDict):
    """``{"name", "description", "parameters"}`` (``parameters``: a JSON Schema)."""

    name: str
    description: str
    parameters: Dict[str, Any]
