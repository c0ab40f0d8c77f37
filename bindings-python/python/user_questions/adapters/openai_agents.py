"""The OpenAI Agents SDK (§21): ``ask_user_question`` (§9) as a ``FunctionTool``.

:func:`ask_user_question_tool` returns a ``FunctionTool`` with §9's name, description and
parameter schema (not in strict mode: the schema's questions and options are open objects with
optional fields, which strict mode cannot express). The SDK calls it with the model's arguments
as JSON text; it runs the seam's tool on the given context — the registered provider asks the
person — and returns §9's tool result as compact JSON text, which the model reads:
``{"isError":false,"value":{"answers":[...]},"content":[...]}`` or the failure form with the
code and message. It never raises for a seam error. When the SDK cancels the tool call (a
timeout, a cancelled run), the ask is withdrawn like any cancelled task (§11).

Needs ``pip install user-questions[openai-agents]``; the package never imports the SDK until
this module is imported.
"""

from __future__ import annotations

import json
from typing import Any, Optional, Union, cast

from agents import FunctionTool
from agents.tool_context import ToolContext

from .. import _native
from .._context import Context, UserQuestionService, _outcome
from .._errors import UserQuestionError
from .._native import Agent
from .._types import ToolResult

__all__ = ["ask_user_question_tool", "result_text"]

_DEFINITION = _native.tool_definition()


def result_text(result: ToolResult) -> str:
    """§9's tool result as the compact JSON text the model reads."""
    return json.dumps(result, separators=(",", ":"), ensure_ascii=False)


def ask_user_question_tool(
    ctx: Union[Context, UserQuestionService],
    agent: Optional[Agent] = None,
    *,
    timeout: Optional[float] = None,
    key_from_call_id: bool = False,
) -> FunctionTool:
    """``ask_user_question`` as a ``FunctionTool`` that asks through the provider of ``ctx`` (a
    context or its ``user_questions``; anything else is ``INVALID_ARGUMENT``).

    ``agent`` is the live root agent the asks are made for (§5; checked on every call);
    ``timeout`` (seconds) is every ask's deadline (§16); with ``key_from_call_id`` each ask's
    ``key`` (§20) is the model's tool call id, so a hub resumes the same question when the
    run is retried with the same call (only for models whose call ids are unique)."""
    if isinstance(ctx, Context):
        native = ctx.user_questions._native
    elif isinstance(ctx, UserQuestionService):
        native = ctx._native
    else:
        raise UserQuestionError(
            "ask_user_question_tool needs a Context or its user_questions", "INVALID_ARGUMENT"
        )

    async def invoke(tool_context: ToolContext[Any], arguments: str) -> str:
        key = None
        if key_from_call_id:
            key = tool_context.tool_call_id or None
        outcome = native.execute_tool(arguments, agent, None, timeout, key)
        result = await _outcome(outcome)
        return result_text(cast(ToolResult, result))

    return FunctionTool(
        name=_DEFINITION["name"],
        description=_DEFINITION["description"],
        params_json_schema=_DEFINITION["parameters"],
        on_invoke_tool=invoke,
        strict_json_schema=False,
    )
