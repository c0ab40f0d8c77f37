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
    "FileValue",
    "InboxEvent",
    "Input",
    "InputKind",
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
    """``{"label", "description"?, "preview"?}``: ``preview`` is shown as preformatted text when
    the option is focused (§24; a unified diff is coloured)."""

    description: str
    preview: str


#: The kinds of typed value a question may ask for (§24).
InputKind = Literal[
    "text", "number", "integer", "boolean", "date", "datetime", "email", "url", "secret", "file"
]


class _InputRequired(TypedDict):
    kind: InputKind


class Input(_InputRequired, total=False):
    """A typed value asked for instead of options (§24): lengths and ``multiline`` for text and
    secret, ``minimum``/``maximum`` for numbers (ISO strings for dates), ``accept`` and
    ``maxBytes`` for files, a ``default`` that fits (not for secret or file)."""

    minLength: int
    maxLength: int
    multiline: bool
    minimum: Union[int, float, str]
    maximum: Union[int, float, str]
    accept: List[str]
    maxBytes: int
    default: Union[str, int, float, bool]


class FileValue(TypedDict):
    """A file given as an answer's value (§24): ``data`` is standard, padded base64 and
    ``sha256`` the lowercase hex digest of the decoded bytes."""

    name: str
    mediaType: str
    size: int
    sha256: str
    data: str


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
    input: Input


class _AnswerItemRequired(TypedDict):
    id: str
    selected: List[str]


class AnswerItem(_AnswerItemRequired, total=False):
    """``{"id", "selected", "custom"?, "value"?}``: ``value`` answers a question with ``input``
    (§24; a file's is a :class:`FileValue`)."""

    custom: str
    value: Union[str, int, float, bool, FileValue]


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
