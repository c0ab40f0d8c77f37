"""The Claude Agent SDK permission handler: AskUserQuestion through the seam, ExitPlanMode
through review_plan (§17), called the way the SDK calls it."""

from __future__ import annotations

import asyncio
import json
from typing import Any, AsyncIterator, Dict, List, Optional

import pytest

import user_questions as uq
from user_questions.adapters import claude

INPUT: Dict[str, Any] = {
    "questions": [
        {
            "question": "Which package manager should we use?",
            "header": "Packages",
            "options": [
                {"label": "pnpm (Recommended)", "description": "Fast, strict node_modules."},
                {"label": "npm", "description": "Ships with Node."},
            ],
            "multiSelect": False,
        },
        {
            "question": "Which checks should run in CI?",
            "header": "CI checks",
            "options": [
                {"label": "Lint", "description": "ESLint and Prettier."},
                {"label": "Tests", "description": "The unit tests."},
            ],
            "multiSelect": True,
        },
    ]
}
PLAN = "1. Add the column\n2. Backfill it\n3. Drop the old one"


class Scripted:
    """A provider that records each request and answers from a script."""

    def __init__(self, *answers: Any) -> None:
        self.requests: List[Dict[str, Any]] = []
        self.answers = list(answers)

    def ask(self, request: Dict[str, Any]) -> Any:
        self.requests.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def plan_answer(selected: List[str], custom: Optional[str] = None) -> Dict[str, Any]:
    item: Dict[str, Any] = {"id": "plan", "selected": selected}
    if custom is not None:
        item["custom"] = custom
    return {"answers": [item]}


async def test_ask_user_question_asks_the_seam_and_allows_with_the_answers(
    ctx: uq.Context,
) -> None:
    provider = Scripted(
        {
            "answers": [
                {"id": "q1", "selected": [], "custom": "yarn"},
                {"id": "q2", "selected": ["Lint", "Tests"]},
            ]
        }
    )
    ctx.user_questions.register_provider(provider)
    decision = await claude.decide(ctx.user_questions, "AskUserQuestion", INPUT)
    assert [q["id"] for q in provider.requests[0]["questions"]] == ["q1", "q2"]
    assert decision == {
        "behavior": "allow",
        "updatedInput": {
            "questions": INPUT["questions"],
            "answers": {
                "Which package manager should we use?": "yarn",
                "Which checks should run in CI?": "Lint, Tests",
            },
        },
    }


async def test_ask_user_question_passes_the_agent_and_refuses_a_delegated_one(
    ctx: uq.Context,
) -> None:
    provider = Scripted()
    ctx.user_questions.register_provider(provider)
    root = uq.Agent("root")
    child = uq.Agent("child")
    ctx.agents.enter(root)
    ctx.agents.enter(child, root)
    decision = await claude.decide(ctx.user_questions, "AskUserQuestion", INPUT, agent=child)
    assert decision is not None and decision["behavior"] == "deny"
    assert decision["message"].startswith("human interaction is unavailable")
    assert provider.requests == []


async def test_a_cancelled_question_denies_with_the_seams_message(ctx: uq.Context) -> None:
    ctx.user_questions.register_provider(
        Scripted(uq.UserQuestionError("the user cancelled ask_user_question", "ASK_CANCELLED"))
    )
    decision = await claude.decide(ctx.user_questions, "AskUserQuestion", INPUT)
    assert decision == {"behavior": "deny", "message": "the user cancelled ask_user_question"}


async def test_input_that_does_not_fit_denies_without_reaching_the_provider(
    ctx: uq.Context,
) -> None:
    provider = Scripted()
    ctx.user_questions.register_provider(provider)
    too_long = {"questions": [dict(INPUT["questions"][0], header="Package manager")]}
    decision = await claude.decide(ctx.user_questions, "AskUserQuestion", too_long)
    assert decision == {
        "behavior": "deny",
        "message": "questions[0].header is longer than 12 characters",
    }
    assert provider.requests == []


async def test_exit_plan_mode_approved_allows_the_call_unchanged(ctx: uq.Context) -> None:
    provider = Scripted(plan_answer(["Approve"]))
    ctx.user_questions.register_provider(provider)
    tool_input = {"plan": PLAN}
    decision = await claude.decide(ctx.user_questions, "ExitPlanMode", tool_input)
    assert decision == {"behavior": "allow", "updatedInput": {"plan": PLAN}}
    (question,) = provider.requests[0]["questions"]
    assert (question["id"], question["detail"], question["intent"]) == (
        "plan",
        PLAN,
        {"kind": "plan-review", "approve": "Approve"},
    )


@pytest.mark.parametrize(
    "answer, message",
    [
        (plan_answer([], "Split step 2 in batches"), "Split step 2 in batches"),
        (
            plan_answer(["Revise"]),
            "The user wants to keep planning before this plan is carried out.",
        ),
        (plan_answer(["Reject"]), "The user rejected this plan."),
        (
            plan_answer([]),
            "The user dismissed the plan review without approving the plan.",
        ),
    ],
    ids=["feedback", "revise", "rejected", "dismissed"],
)
async def test_exit_plan_mode_not_approved_denies_with_the_feedback(
    ctx: uq.Context, answer: Dict[str, Any], message: str
) -> None:
    ctx.user_questions.register_provider(Scripted(answer))
    decision = await claude.decide(ctx.user_questions, "ExitPlanMode", {"plan": PLAN})
    assert decision == {"behavior": "deny", "message": message}


async def test_exit_plan_mode_without_a_plan_denies(ctx: uq.Context) -> None:
    provider = Scripted()
    ctx.user_questions.register_provider(provider)
    decision = await claude.decide(ctx.user_questions, "ExitPlanMode", {})
    assert decision == {"behavior": "deny", "message": "review_plan requires a plan"}
    assert provider.requests == []


async def test_other_tools_are_not_decided(ctx: uq.Context) -> None:
    assert await claude.decide(ctx.user_questions, "Bash", {"command": "ls"}) is None


# --- through the SDK's own control protocol handling -------------------------------------


class RecordingTransport:
    """The CLI side of the SDK's transport: records what the SDK writes back."""

    def __init__(self) -> None:
        self.written: List[Dict[str, Any]] = []

    async def connect(self) -> None:
        pass

    async def write(self, data: str) -> None:
        self.written.append(json.loads(data))

    async def read_messages(self) -> AsyncIterator[Dict[str, Any]]:
        return
        yield

    async def close(self) -> None:
        pass

    def is_ready(self) -> bool:
        return True

    async def end_input(self) -> None:
        pass


async def sdk_permission_request(handler: Any, tool_name: str, tool_input: Any) -> Any:
    """Sends one ``can_use_tool`` control request through the SDK's Query and returns the
    control response it writes for the CLI."""
    from claude_agent_sdk._internal.query import Query
    from claude_agent_sdk._internal.transport import Transport

    class CliSide(RecordingTransport, Transport):
        pass

    transport = CliSide()
    query = Query(transport=transport, is_streaming_mode=True, can_use_tool=handler)
    try:
        await query._handle_control_request(
            {
                "type": "control_request",
                "request_id": "req_1",
                "request": {
                    "subtype": "can_use_tool",
                    "tool_name": tool_name,
                    "input": tool_input,
                    "permission_suggestions": None,
                    "tool_use_id": "toolu_1",
                },
            }
        )
    finally:
        await query.close()
        query.close_receive_stream()
    (message,) = transport.written
    assert message["type"] == "control_response"
    return message["response"]


async def test_can_use_tool_answers_the_sdks_control_request(ctx: uq.Context) -> None:
    ctx.user_questions.register_provider(
        Scripted({"answers": [{"id": "q1", "selected": ["npm"]}, {"id": "q2", "selected": []}]})
    )
    response = await sdk_permission_request(
        claude.can_use_tool(ctx.user_questions), "AskUserQuestion", INPUT
    )
    assert response == {
        "subtype": "success",
        "request_id": "req_1",
        "response": {
            "behavior": "allow",
            "updatedInput": {
                "questions": INPUT["questions"],
                "answers": {"Which package manager should we use?": "npm"},
            },
        },
    }


async def test_option_previews_reach_the_provider_and_come_back_in_the_sdks_answer(
    ctx: uq.Context,
) -> None:
    """§24: Claude's option ``preview`` is the option's ``preview`` on the way in, and the
    updated input the SDK receives keeps it on the way out."""
    diff = "@@ -1 +1 @@\n-retries = 1\n+retries = 3"
    tool_input = {
        "questions": [
            {
                "question": "Which fix should be applied?",
                "header": "Fix",
                "options": [
                    {"label": "Patch A", "description": "Smallest change.", "preview": diff},
                    {"label": "Patch B", "preview": "# Rewrite\nReplace the retry loop."},
                ],
                "multiSelect": False,
            }
        ]
    }
    provider = Scripted({"answers": [{"id": "q1", "selected": ["Patch A"]}]})
    ctx.user_questions.register_provider(provider)
    response = await sdk_permission_request(
        claude.can_use_tool(ctx.user_questions), "AskUserQuestion", tool_input
    )
    assert [o.get("preview") for o in provider.requests[0]["questions"][0]["options"]] == [
        diff,
        "# Rewrite\nReplace the retry loop.",
    ]
    assert response["response"] == {
        "behavior": "allow",
        "updatedInput": {
            "questions": tool_input["questions"],
            "answers": {"Which fix should be applied?": "Patch A"},
        },
    }


async def test_can_use_tool_denies_a_rejected_plan(ctx: uq.Context) -> None:
    ctx.user_questions.register_provider(Scripted(plan_answer(["Reject"])))
    response = await sdk_permission_request(
        claude.can_use_tool(ctx.user_questions), "ExitPlanMode", {"plan": PLAN}
    )
    assert response["response"] == {
        "behavior": "deny",
        "message": "The user rejected this plan.",
    }


async def test_can_use_tool_sends_other_tools_to_the_fallback_or_denies(
    ctx: uq.Context,
) -> None:
    from claude_agent_sdk.types import PermissionResultAllow

    seen: List[Any] = []

    async def fallback(tool_name: str, tool_input: Dict[str, Any], context: Any) -> Any:
        seen.append((tool_name, tool_input, context.tool_use_id))
        return PermissionResultAllow()

    with_fallback = claude.can_use_tool(ctx.user_questions, fallback=fallback)
    response = await sdk_permission_request(with_fallback, "Bash", {"command": "ls"})
    assert response["response"] == {"behavior": "allow", "updatedInput": {"command": "ls"}}
    assert seen == [("Bash", {"command": "ls"}, "toolu_1")]

    response = await sdk_permission_request(
        claude.can_use_tool(ctx.user_questions), "Bash", {"command": "ls"}
    )
    assert response["response"] == {
        "behavior": "deny",
        "message": "Bash is not allowed by this host's permission handler",
    }


async def test_the_signal_given_to_decide_reaches_the_ask_and_the_plan_review(
    ctx: uq.Context,
) -> None:
    provider = Scripted()  # never reached: the signal is aborted before the ask
    ctx.user_questions.register_provider(provider)
    controller = uq.AbortController()
    controller.abort()
    aborted = {
        "behavior": "deny",
        "message": "ask_user_question was aborted before the user answered",
    }
    for tool_name, tool_input in (("AskUserQuestion", INPUT), ("ExitPlanMode", {"plan": PLAN})):
        decision = await claude.decide(
            ctx.user_questions, tool_name, tool_input, signal=controller.signal
        )
        assert decision == aborted, tool_name
    assert provider.requests == []


async def test_the_sdks_cancel_request_withdraws_the_question(ctx: uq.Context) -> None:
    """The SDK passes no signal to ``can_use_tool``; when the CLI cancels the permission
    request (``control_cancel_request``), the SDK cancels the task running the handler, which
    withdraws the ask (every UI drops it, §4.7), and no response is written for it."""
    from claude_agent_sdk._internal.query import Query
    from claude_agent_sdk._internal.transport import Transport

    inbox = uq.QuestionInbox()
    ctx.user_questions.register_provider(inbox)
    events: List[Any] = []
    asked, resolved = asyncio.Event(), asyncio.Event()

    def on_event(event: Any) -> None:
        events.append(event)
        (asked if event["type"] == "requested" else resolved).set()

    inbox.subscribe(on_event)

    class CliSide(RecordingTransport, Transport):
        async def read_messages(self) -> AsyncIterator[Dict[str, Any]]:
            yield {
                "type": "control_request",
                "request_id": "req_1",
                "request": {
                    "subtype": "can_use_tool",
                    "tool_name": "AskUserQuestion",
                    "input": INPUT,
                    "permission_suggestions": None,
                    "tool_use_id": "toolu_1",
                },
            }
            await asked.wait()
            yield {"type": "control_cancel_request", "request_id": "req_1"}
            await asyncio.Event().wait()  # the CLI stays connected

    transport = CliSide()
    query = Query(
        transport=transport,
        is_streaming_mode=True,
        can_use_tool=claude.can_use_tool(ctx.user_questions),
    )
    try:
        await query.start()
        await asyncio.wait_for(resolved.wait(), 10)
    finally:
        await query.close()
        query.close_receive_stream()
    assert [(e["type"], e["ticket"]) for e in events] == [("requested", 1), ("resolved", 1)]
    assert events[1]["outcome"] == "aborted"
    assert inbox.pending() == []
    assert transport.written == []
