"""The question inbox (§7) from Python: pending questions answered by a UI on another
task or thread, events to subscribers."""

from __future__ import annotations

import asyncio
import re
import sys
import threading
import time
from typing import Any, Dict, List

import pytest

import user_questions as uq
from conftest import QUESTION, YES, request


async def _pending(inbox: uq.QuestionInbox, n: int = 1) -> List[Dict[str, Any]]:
    deadline = time.monotonic() + 5
    while len(inbox.pending()) < n and time.monotonic() < deadline:
        await asyncio.sleep(0.001)
    return inbox.pending()


RFC3339_MS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def _without_asked_at(item: Any) -> Any:
    """``item`` without its ``askedAt``, which must be RFC 3339 UTC with milliseconds."""
    item = dict(item)
    assert RFC3339_MS.match(item.pop("askedAt")), item
    return item


async def _until(predicate: Any) -> None:
    deadline = time.monotonic() + 5
    while not predicate() and time.monotonic() < deadline:
        await asyncio.sleep(0.001)
    assert predicate()


async def test_a_ui_answers_a_pending_question_from_another_thread(ctx: uq.Context) -> None:
    inbox = uq.QuestionInbox()
    ctx.user_questions.register_provider(inbox)
    root = uq.Agent("root")
    ctx.agents.enter(root)
    task = asyncio.ensure_future(ctx.user_questions.ask(request(agent=root)))
    (pending,) = await _pending(inbox)
    assert _without_asked_at(pending) == {"ticket": 1, "questions": [QUESTION], "agentId": "root"}
    thread = threading.Thread(target=inbox.answer, args=(1, YES))
    thread.start()
    assert await asyncio.wait_for(task, 5) == YES
    thread.join()
    assert inbox.pending() == [] and len(inbox) == 0


async def test_settling_errors(ctx: uq.Context) -> None:
    inbox = uq.QuestionInbox()
    ctx.user_questions.register_provider(inbox)
    task = asyncio.ensure_future(ctx.user_questions.ask(request()))
    await _pending(inbox)

    def code(call: Any, *args: Any) -> str:
        with pytest.raises(uq.UserQuestionError) as info:
            call(*args)
        return f"{info.value.code}: {info.value.message}"

    assert code(inbox.answer, 1, {"answers": [{"id": "go", "selected": ["Maybe"]}]}) == (
        'BAD_ANSWER: question go selects "Maybe", which is not one of its options'
    )
    assert code(inbox.answer, 1, {"answers": "nope"}) == "BAD_ANSWER: answers must be an array"
    assert code(inbox.answer, 7, YES) == "NOT_PENDING: question 7 is not pending"
    assert code(inbox.cancel, 0) == "NOT_PENDING: question 0 is not pending"
    assert code(inbox.fail, -3, "x") == "NOT_PENDING: question -3 is not pending"
    assert code(inbox.cancel, 2**70) == f"NOT_PENDING: question {2**70} is not pending"
    # A ticket is an int: not a bool (True would name ticket 1), a float or a string.
    not_tickets: List[Any] = [True, False, 1.0, "1", None]
    for bad in not_tickets:
        kind = type(bad).__name__
        expected = f"INVALID_ARGUMENT: a ticket must be an int, not {kind}"
        assert code(inbox.answer, bad, YES) == expected
        assert code(inbox.cancel, bad) == expected
        assert code(inbox.fail, bad, "x") == expected
        assert code(inbox.extend, bad, 1) == expected
    assert [p["ticket"] for p in inbox.pending()] == [1]
    inbox.cancel(1)
    with pytest.raises(uq.UserQuestionError) as info:
        await task
    assert (info.value.code, info.value.message) == (
        "ASK_CANCELLED",
        "the user cancelled ask_user_question",
    )
    assert code(inbox.answer, 1, YES) == "ALREADY_RESOLVED: question 1 is already resolved"
    assert code(inbox.cancel, 1) == "ALREADY_RESOLVED: question 1 is already resolved"
    task = asyncio.ensure_future(ctx.user_questions.ask(request()))
    await _pending(inbox)
    inbox.fail(2, "the browser tab closed")
    with pytest.raises(uq.UserQuestionError) as failed:
        await task
    assert (failed.value.code, failed.value.message) == (
        "PROVIDER_FAILED",
        "the browser tab closed",
    )


async def test_subscribers_see_every_event_and_several_uis_watch_one_inbox(ctx: uq.Context) -> None:
    inbox = uq.QuestionInbox()
    ctx.user_questions.register_provider(inbox)
    first: List[Dict[str, Any]] = []
    second: List[Dict[str, Any]] = []
    inbox.subscribe(first.append)
    unsubscribe = inbox.subscribe(second.append)
    task = asyncio.ensure_future(ctx.user_questions.ask(request()))
    await _pending(inbox)
    inbox.answer(1, YES)
    await task
    unsubscribe()
    unsubscribe()
    task = asyncio.ensure_future(ctx.user_questions.ask(request()))
    await _pending(inbox)
    task.cancel()  # the asker withdraws: "aborted"
    with pytest.raises(asyncio.CancelledError):
        await task
    await _until(lambda: len(first) == 4)
    first = [e if e["type"] != "requested" else _without_asked_at(e) for e in first]
    second = [e if e["type"] != "requested" else _without_asked_at(e) for e in second]
    assert first == [
        {"type": "requested", "ticket": 1, "questions": [QUESTION]},
        {"type": "resolved", "ticket": 1, "outcome": "answered"},
        {"type": "requested", "ticket": 2, "questions": [QUESTION]},
        {"type": "resolved", "ticket": 2, "outcome": "aborted"},
    ]
    assert second == first[:2]


async def test_a_raising_subscriber_goes_to_unraisablehook_and_delivery_goes_on(
    ctx: uq.Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    reported: List[Any] = []
    monkeypatch.setattr(sys, "unraisablehook", reported.append)
    inbox = uq.QuestionInbox()
    ctx.user_questions.register_provider(inbox)
    seen: List[Dict[str, Any]] = []

    def broken(event: Dict[str, Any]) -> None:
        raise RuntimeError("the UI crashed")

    inbox.subscribe(broken)
    inbox.subscribe(seen.append)
    task = asyncio.ensure_future(ctx.user_questions.ask(request()))
    await _pending(inbox)
    inbox.answer(1, YES)
    assert await task == YES
    assert [e["type"] for e in seen] == ["requested", "resolved"]
    assert [str(r.exc_value) for r in reported] == ["the UI crashed", "the UI crashed"]


async def test_a_ui_task_answers_a_thousand_concurrent_asks(ctx: uq.Context) -> None:
    inbox = uq.QuestionInbox()
    ctx.user_questions.register_provider(inbox)
    requested: "asyncio.Queue[int]" = asyncio.Queue()
    loop = asyncio.get_running_loop()
    inbox.subscribe(
        lambda e: (
            loop.call_soon_threadsafe(requested.put_nowait, e["ticket"])
            if e["type"] == "requested"
            else None
        )
    )

    async def ui() -> None:
        for _ in range(1000):
            ticket = await requested.get()
            inbox.answer(ticket, YES)

    ui_task = asyncio.ensure_future(ui())
    answers = await asyncio.wait_for(
        asyncio.gather(*(ctx.user_questions.ask(request()) for _ in range(1000))), 60
    )
    await ui_task
    assert answers == [YES] * 1000


async def test_closing_the_context_settles_a_pending_question(ctx: uq.Context) -> None:
    inbox = uq.QuestionInbox()
    ctx.user_questions.register_provider(inbox)
    events: List[Dict[str, Any]] = []
    inbox.subscribe(events.append)
    task = asyncio.ensure_future(ctx.user_questions.ask(request()))
    await _pending(inbox)
    ctx.close()
    with pytest.raises(uq.UserQuestionError) as info:
        await task
    assert info.value.code == "ASK_ABORTED"
    await _until(lambda: len(events) == 2)
    assert events[1] == {"type": "resolved", "ticket": 1, "outcome": "aborted"}
    assert inbox.pending() == []


def test_validate_answer() -> None:
    questions = [dict(QUESTION)]
    assert uq.validate_answer(questions, YES) is None
    with pytest.raises(uq.UserQuestionError) as bad:
        uq.validate_answer(questions, {"answers": []})
    assert bad.value.code == "BAD_ANSWER"
    assert bad.value.message == (
        "the answer has 0 items for 1 questions; it needs exactly one per question, in order"
    )
    with pytest.raises(uq.UserQuestionError) as malformed:
        uq.validate_answer([{"id": "x"}], YES)
    assert (malformed.value.code, malformed.value.message) == (
        "INVALID_REQUEST",
        "questions[0].question must be a string",
    )


def test_auto_responder() -> None:
    plan = {
        "id": "plan",
        "question": "Approve?",
        "detail": "1. do it",
        "options": [{"label": "Approve (Recommended)"}, {"label": "Revise"}],
        "intent": {"kind": "plan-review", "approve": "Approve (Recommended)"},
    }
    auto = uq.AutoResponder("recommended")
    assert (auto.policy, auto.approve_intents) == ("recommended", False)
    assert auto.answer([plan]) == {"answers": [{"id": "plan", "selected": ["Revise"]}]}
    approving = uq.AutoResponder("recommended", approve_intents=True)
    assert approving.answer([plan])["answers"][0]["selected"] == ["Approve (Recommended)"]
    with pytest.raises(uq.UserQuestionError) as info:
        uq.AutoResponder("best")
    assert info.value.code == "INVALID_ARGUMENT"


async def test_a_subscription_is_a_context_manager_that_unsubscribes_on_exit(
    ctx: uq.Context,
) -> None:
    inbox = uq.QuestionInbox()
    ctx.user_questions.register_provider(inbox)
    seen: List[uq.InboxEvent] = []
    with inbox.subscribe(seen.append) as subscription:
        assert isinstance(subscription, uq.InboxUnsubscribe)
        task = asyncio.ensure_future(ctx.user_questions.ask(request()))
        await _pending(inbox)
    inbox.answer(1, YES)
    assert await task == YES
    assert [_without_asked_at(e) for e in seen] == [
        {"type": "requested", "ticket": 1, "questions": [QUESTION]}
    ]
    subscription()  # still idempotent after the block


async def test_an_exception_leaving_the_subscription_block_unsubscribes_too(
    ctx: uq.Context,
) -> None:
    inbox = uq.QuestionInbox()
    ctx.user_questions.register_provider(inbox)
    seen: List[uq.InboxEvent] = []
    with pytest.raises(KeyError), inbox.subscribe(seen.append):
        raise KeyError("the UI failed")
    task = asyncio.ensure_future(ctx.user_questions.ask(request()))
    await _pending(inbox)
    inbox.answer(1, YES)
    assert await task == YES
    assert seen == []


async def test_an_answer_on_the_asker_s_loop_completes_the_ask_before_it_returns(
    ctx: uq.Context,
) -> None:
    # The asker resumes in the very next loop iteration; subscribers have seen `resolved`
    # before it does (§4.7).
    inbox = uq.QuestionInbox()
    ctx.user_questions.register_provider(inbox)
    order: List[str] = []

    def on_event(event: Dict[str, Any]) -> None:
        order.append(event["type"])

    async def asker() -> Dict[str, Any]:
        answer = await ctx.user_questions.ask(request())
        order.append("asker resumed")
        return answer

    with inbox.subscribe(on_event):
        for outcome in ("answer", "cancel", "fail"):
            order.clear()
            task = asyncio.ensure_future(asker())
            (pending,) = await _pending(inbox)
            if outcome == "answer":
                inbox.answer(pending["ticket"], YES)
            elif outcome == "cancel":
                inbox.cancel(pending["ticket"])
            else:
                inbox.fail(pending["ticket"], "no")
            assert not task.done()
            await asyncio.sleep(0)
            assert task.done()
            if outcome == "answer":
                assert task.result() == YES
                assert order == ["requested", "resolved", "asker resumed"]
            else:
                assert isinstance(task.exception(), uq.UserQuestionError)
                assert order == ["requested", "resolved"]


_TWO_LOOPS_ONE_INBOX = r"""
import asyncio, sys, threading
import user_questions as uq

# Thread switches as often as CPython allows: the GIL changes hands inside every window.
sys.setswitchinterval(1e-6)
ctx = uq.Context()
inbox = uq.QuestionInbox()
ctx.user_questions.register_provider(inbox)
events = []
inbox.subscribe(lambda event: events.append(event["type"]))


def worker():
    async def main():
        for _ in range(ROUNDS):
            task = asyncio.ensure_future(ctx.user_questions.ask({"questions": QUESTIONS}))
            await asyncio.sleep(0)
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass

    asyncio.run(main())


threads = [threading.Thread(target=worker) for _ in range(2)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(events.count("requested"), events.count("resolved"))
"""


def test_two_threads_with_their_own_loops_asking_one_inbox_with_a_subscriber_never_deadlock() -> (
    None
):
    # One thread delivers the inbox's events (a Python subscriber: it needs the GIL) while the
    # other waits for that delivery to finish before its ask goes on (§4.7): the waiting
    # thread must not hold the GIL meanwhile. In a child process, so a deadlock fails the
    # test instead of hanging it.
    import subprocess

    rounds = 3000
    script = _TWO_LOOPS_ONE_INBOX.replace("ROUNDS", str(rounds)).replace(
        "QUESTIONS", repr([QUESTION])
    )
    for _ in range(3):
        try:
            done = subprocess.run(
                [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
            )
        except subprocess.TimeoutExpired:
            pytest.fail("deadlocked: two asking threads never finished")
        assert done.returncode == 0, done.stderr
        # Every ask was asked and withdrawn, each event delivered once.
        assert done.stdout.split() == [str(2 * rounds), str(2 * rounds)]


async def test_any_mapping_is_read_as_a_dict_is(ctx: uq.Context) -> None:
    """The stubs take ``Mapping[str, Any]`` for answers and questions: a ``MappingProxyType``
    or a ``UserDict`` is read like a dict (it was refused: "answer must be an object")."""
    from collections import UserDict
    from types import MappingProxyType

    questions = [
        {"id": "go", "question": "Proceed?", "options": [{"label": "Yes"}, {"label": "No"}]}
    ]
    frozen = MappingProxyType({"answers": [MappingProxyType({"id": "go", "selected": ["No"]})]})
    # An inbox answer.
    inbox = uq.QuestionInbox()
    ctx.user_questions.register_provider(inbox)
    task = asyncio.ensure_future(ctx.user_questions.ask({"questions": questions}))
    await _pending(inbox)
    inbox.answer(1, frozen)
    assert await task == {"answers": [{"id": "go", "selected": ["No"]}]}
    # A provider's answer.
    other = uq.Context()

    class Frozen:
        def ask(self, request: Any) -> Any:
            return frozen

    other.user_questions.register_provider(Frozen())
    assert await other.user_questions.ask({"questions": questions}) == {
        "answers": [{"id": "go", "selected": ["No"]}]
    }
    other.close()
    # Checking one, and the auto-responder's questions.
    with pytest.raises(uq.UserQuestionError) as info:
        uq.validate_answer(questions, UserDict({"answers": [{"id": "go", "selected": ["Maybe"]}]}))
    assert (info.value.code, info.value.message) == (
        "BAD_ANSWER",
        'question go selects "Maybe", which is not one of its options',
    )
    assert uq.AutoResponder("first").answer([MappingProxyType(questions[0])]) == {
        "answers": [{"id": "go", "selected": ["Yes"]}]
    }
