"""Whom a question is for and who answered (docs/reference.md §23) from Python: a request's
``to`` reaches the provider and the inbox's pending question; an answer's ``respondent``
reaches the asker and the ``resolved`` event's ``by``."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any, Dict, List

import pytest

import user_questions as uq
from conftest import QUESTION, YES, request

BAD_TO = "to must be a list of 1 to 32 person or group names"
ALICE: uq.Respondent = {"id": "alice", "name": "Alice Martin"}


async def _pending(inbox: uq.QuestionInbox) -> List[uq.PendingQuestion]:
    deadline = time.monotonic() + 5
    while not inbox.pending() and time.monotonic() < deadline:
        await asyncio.sleep(0.001)
    return inbox.pending()


async def test_to_reaches_the_inbox_s_pending_question_last(ctx: uq.Context) -> None:
    inbox = uq.QuestionInbox()
    ctx.user_questions.register_provider(inbox)
    events: List[uq.InboxEvent] = []
    inbox.subscribe(events.append)
    task = asyncio.ensure_future(ctx.user_questions.ask(request(to=["ops", "alice"])))
    (pending,) = await _pending(inbox)
    assert pending.get("to") == ["ops", "alice"]
    assert list(pending)[-1] == "to"
    assert events[0]["type"] == "requested" and events[0].get("to") == ["ops", "alice"]
    inbox.answer(1, YES)
    assert await asyncio.wait_for(task, 5) == YES


async def test_to_reaches_a_python_provider(ctx: uq.Context) -> None:
    seen: List[uq.ProviderRequest] = []

    class Recording:
        def ask(self, req: uq.ProviderRequest) -> uq.Answer:
            seen.append(req)
            return YES  # type: ignore[return-value]

    ctx.user_questions.register_provider(Recording())
    # A tuple is a list here, as JSON text's list is.
    assert await ctx.user_questions.ask({"questions": [QUESTION], "to": ("ops",)}) == YES
    wire = json.dumps({"questions": [QUESTION], "to": ["é" * 64]})
    assert await ctx.user_questions.ask(wire) == YES
    assert [r.get("to") for r in seen] == [["ops"], ["é" * 64]]
    await ctx.user_questions.ask(request())
    assert "to" not in seen[2]


@pytest.mark.parametrize(
    "to",
    [[], [f"p{i}" for i in range(33)], [""], ["é" * 65], "ops", [7], ["ops", None], None, {}],
)
async def test_a_bad_to_is_invalid_request_before_the_provider(ctx: uq.Context, to: Any) -> None:
    inbox = uq.QuestionInbox()
    ctx.user_questions.register_provider(inbox)
    for req in (request(to=to), json.dumps({"questions": [QUESTION], "to": to})):
        with pytest.raises(uq.UserQuestionError) as raised:
            await ctx.user_questions.ask(req)
        assert (raised.value.code, raised.value.message) == ("INVALID_REQUEST", BAD_TO)
    assert inbox.pending() == []
    # Well-formedness first: before the empty questions of §3; after the key's own check.
    with pytest.raises(uq.UserQuestionError) as raised:
        await ctx.user_questions.ask({"questions": [], "to": to})
    assert raised.value.message == BAD_TO
    with pytest.raises(uq.UserQuestionError) as raised:
        await ctx.user_questions.ask(request(key="", to=to))
    assert raised.value.message == "key must be a non-empty string of at most 256 characters"


async def test_an_inbox_answer_s_respondent_reaches_the_asker_and_the_event(
    ctx: uq.Context,
) -> None:
    inbox = uq.QuestionInbox()
    ctx.user_questions.register_provider(inbox)
    events: List[uq.InboxEvent] = []
    inbox.subscribe(events.append)
    task = asyncio.ensure_future(ctx.user_questions.ask(request()))
    await _pending(inbox)
    for bad, message in [
        ("alice", "respondent must be an object"),
        ({"id": "alice"}, "respondent.name must be a string"),
        ({"id": 7, "name": "A"}, "respondent.id must be a string"),
    ]:
        with pytest.raises(uq.UserQuestionError) as raised:
            inbox.answer(1, {**YES, "respondent": bad})
        assert (raised.value.code, raised.value.message) == ("BAD_ANSWER", message)
    assert len(inbox) == 1
    inbox.answer(1, {**YES, "respondent": ALICE})
    answer = await asyncio.wait_for(task, 5)
    assert answer == {**YES, "respondent": ALICE}
    assert list(answer) == ["answers", "respondent"]
    assert events[-1] == {"type": "resolved", "ticket": 1, "outcome": "answered", "by": ALICE}


async def test_a_provider_s_answer_keeps_its_respondent(ctx: uq.Context) -> None:
    answered: Dict[str, Any] = {**YES, "respondent": ALICE}

    class ByAlice:
        def ask(self, req: uq.ProviderRequest) -> Dict[str, Any]:
            return answered

    ctx.user_questions.register_provider(ByAlice())
    assert await ctx.user_questions.ask(request()) == answered
    # The model never reads who answered (§9).
    tool = uq.AskUserQuestionTool(ctx)
    result = await tool.execute({"questions": [QUESTION]})
    assert "alice" not in json.dumps(result)


async def test_cancel_by_a_person(ctx: uq.Context) -> None:
    inbox = uq.QuestionInbox()
    ctx.user_questions.register_provider(inbox)
    events: List[uq.InboxEvent] = []
    inbox.subscribe(events.append)
    for ticket, by in [(1, ALICE), (2, None)]:
        task = asyncio.ensure_future(ctx.user_questions.ask(request()))
        await _pending(inbox)
        inbox.cancel(ticket, by=by)
        with pytest.raises(uq.UserQuestionError) as raised:
            await asyncio.wait_for(task, 5)
        assert raised.value.code == "ASK_CANCELLED"
    resolved = [e for e in events if e["type"] == "resolved"]
    assert resolved == [
        {"type": "resolved", "ticket": 1, "outcome": "cancelled", "by": ALICE},
        {"type": "resolved", "ticket": 2, "outcome": "cancelled"},
    ]
    task = asyncio.ensure_future(ctx.user_questions.ask(request()))
    await _pending(inbox)
    with pytest.raises(uq.UserQuestionError) as raised:
        inbox.cancel(3, by={"id": "alice"})  # type: ignore[typeddict-item]
    assert raised.value.code == "INVALID_ARGUMENT"
    assert len(inbox) == 1
    inbox.cancel(3)
    with pytest.raises(uq.UserQuestionError):
        await asyncio.wait_for(task, 5)
