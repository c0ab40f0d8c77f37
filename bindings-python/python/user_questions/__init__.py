"""user-questions: the one place where an AI agent stops a tool call and asks the human.

An asker awaits ``ctx.user_questions.ask({"questions": [...], "agent": a, "signal": s})``;
exactly one provider per :class:`Context` (any object with an ``ask(request)`` method, a
:class:`QuestionInbox`, an :class:`AutoResponder`, a :class:`TerminalProvider`, a
:class:`WebProvider`, a :class:`RemoteProvider`) shows the
questions and returns the answer. The seam validates every request before a provider sees
it, admits only the exact live runtime-root agent, and settles every ask exactly once. The
behaviour is the Rust core's (docs/reference.md); this package is a thin asyncio-native
layer over it.
"""

from __future__ import annotations

from typing import Dict

from . import _native
from ._context import AskUserQuestionTool, Context, Provider, UserQuestionService
from ._errors import EventLoopThreadError, UserQuestionError
from ._native import (
    AbortController,
    AbortSignal,
    Agent,
    AgentDetach,
    AgentRegistry,
    AutoResponder,
    InboxUnsubscribe,
    ProviderRegistration,
    QuestionInbox,
    RemoteProvider,
    TerminalProvider,
    WebProvider,
    validate_answer,
)
from ._types import (
    Answer,
    AnswerItem,
    CodeName,
    Decision,
    ExtendedEvent,
    FileValue,
    InboxEvent,
    Input,
    InputKind,
    Intent,
    Item,
    Option,
    Outcome,
    PendingQuestion,
    PlanReview,
    ProviderRequest,
    Request,
    RequestedEvent,
    ResolvedEvent,
    Respondent,
    TextContent,
    ToolDefinition,
    ToolError,
    ToolFailure,
    ToolResult,
    ToolSuccess,
)

__all__ = [
    "CODES",
    "AbortController",
    "AbortSignal",
    "Agent",
    "AgentDetach",
    "AgentRegistry",
    "Answer",
    "AnswerItem",
    "AskUserQuestionTool",
    "AutoResponder",
    "CodeName",
    "Context",
    "Decision",
    "EventLoopThreadError",
    "ExtendedEvent",
    "FileValue",
    "InboxEvent",
    "InboxUnsubscribe",
    "Input",
    "InputKind",
    "Intent",
    "Item",
    "Option",
    "Outcome",
    "PendingQuestion",
    "PlanReview",
    "Provider",
    "ProviderRegistration",
    "ProviderRequest",
    "QuestionInbox",
    "Question",
    "RemoteProvider",
    "Request",
    "RequestedEvent",
    "ResolvedEvent",
    "Respondent",
    "TerminalProvider",
    "TextContent",
    "ToolDefinition",
    "ToolError",
    "ToolFailure",
    "ToolResult",
    "ToolSuccess",
    "UserQuestionError",
    "UserQuestionService",
    "WebProvider",
    "validate_answer",
]

__version__: str = _native.__version__

#: Every error code name → its number (§10; the numbers are the C ABI's), from the core.
CODES: Dict[str, int] = dict(_native.CODES)

#: A question (the wire type ``AskUserQuestionItem``); the same as :data:`Item`.
Question = Item
