"""The model-facing tool (§9) from Python."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Dict

import pytest

import user_questions as uq
from conftest import YES

DESCRIPTION = (
    "Ask the user a concise question when you need confirmation, a choice, or missing "
    "information before proceeding. Send one or more questions, each with a stable id that "
    "will be echoed in the answer."
)
ARGS = {
    "questions": [
        {"id": "go", "question": "Proceed?", "options": [{"label": "Yes"}], "multi_select": False}
    ]
}


def test_the_definition(ctx: uq.Context) -> None:
    tool = uq.AskUserQuestionTool(ctx)
    assert tool.name == "ask_user_question"
    assert tool.description == DESCRIPTION
    assert tool.definition == {
        "name": tool.name,
        "description": DESCRIPTION,
        "parameters": tool.parameters,
    }
    params = tool.parameters
    assert params["type"] == "object" and params["required"] == ["questions"]
    items = params["properties"]["questions"]["items"]
    assert items["required"] == ["id", "question"] and items["additionalProperties"] is True
    assert set(items["properties"]) == {
        "id",
        "question",
        "header",
        "options",
        "multi_select",
        "input",
    }
    assert items["properties"]["options"]["items"]["required"] == ["label"]
    assert set(items["properties"]["options"]["items"]["properties"]) == {
        "label",
        "description",
        "preview",
    }
    assert items["properties"]["input"]["required"] == ["kind"]
    # A fresh dict each time: callers may change theirs.
    params["required"].append("x")
    assert tool.parameters["required"] == ["questions"]
    assert list(tool.definition) == ["name", "description", "parameters"]


async def test_execute_returns_the_success_result(ctx: uq.Context) -> None:
    seen: Dict[str, Any] = {}

    class Recording:
        def ask(self, req: Dict[str, Any]) -> Dict[str, Any]:
            seen.update(req)
            return YES

    ctx.user_questions.register_provider(Recording())
    tool = uq.AskUserQuestionTool(ctx)
    root = uq.Agent("root")
    ctx.agents.enter(root)
    result = await tool.execute(ARGS, agent=root)
    assert result == {
        "isError": False,
        "value": YES,
        "content": [{"type": "text", "text": '{"answers":[{"id":"go","selected":["Yes"]}]}'}],
    }
    assert list(result) == ["isError", "value", "content"]
    assert seen["agent"] is root
    assert seen["questions"] == [
        {"id": "go", "question": "Proceed?", "options": [{"label": "Yes"}], "multiSelect": False}
    ]
    assert await tool.execute(json.dumps(ARGS)) == result


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (None, "arguments must be an object"),
        ([], "arguments must be an object"),
        ({}, "questions must be an array"),
        ({"questions": [{"id": "a"}]}, "questions[0].question must be a string"),
        ("{nope", None),
    ],
)
async def test_bad_arguments_are_an_invalid_request_result(
    ctx: uq.Context, args: Any, message: Any
) -> None:
    result = await uq.AskUserQuestionTool(ctx).execute(args)
    assert result["isError"] is True
    assert result["error"]["code"] == "INVALID_REQUEST"
    assert result["error"]["name"] == "UserQuestionError"
    if message is not None:
        assert result["error"]["message"] == message
    assert result["content"] == [{"type": "text", "text": "Error: " + result["error"]["message"]}]


async def test_seam_errors_are_results_never_exceptions(ctx: uq.Context) -> None:
    tool = uq.AskUserQuestionTool(ctx)
    assert (await tool.execute(ARGS))["error"]["code"] == "NO_PROVIDER"
    ctx.user_questions.register_provider(uq.AutoResponder())
    assert (await tool.execute(ARGS, agent=uq.Agent("ghost")))["error"]["code"] == "CALLER_NOT_LIVE"
    controller = uq.AbortController()
    controller.abort()
    assert (await tool.execute(ARGS, signal=controller.signal))["error"]["code"] == "ASK_ABORTED"
    assert (await tool.execute(ARGS, agent="root"))["error"] == {  # type: ignore[arg-type]
        "name": "UserQuestionError",
        "code": "CALLER_NOT_LIVE",
        "message": "human interaction requires the exact live calling agent when an agent is supplied",
    }


async def test_cancelling_execute_withdraws_the_ask(ctx: uq.Context) -> None:
    inbox = uq.QuestionInbox()
    ctx.user_questions.register_provider(inbox)
    events: list = []
    inbox.subscribe(events.append)
    task = asyncio.ensure_future(uq.AskUserQuestionTool(ctx).execute(ARGS))
    while not inbox.pending():
        await asyncio.sleep(0.001)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    while len(events) < 2:
        await asyncio.sleep(0.001)
    assert events[1] == {"type": "resolved", "ticket": 1, "outcome": "aborted"}
