"""What an ask leaves behind once it settled: nothing. An ask that waited and then failed
(withdrawn, timed out, cancelled, its context closed) is freed — its exception, its traceback
and the asyncio future held each other in a cycle the garbage collector could not free —
and a closed context lets its journal file go."""

from __future__ import annotations

import asyncio
import gc
import os
from pathlib import Path
from typing import Awaitable, Callable

import pytest

import user_questions as uq

Q = [{"id": "go", "question": "Proceed?", "options": [{"label": "Yes"}, {"label": "No"}]}]


def live_errors() -> int:
    """How many UserQuestionError objects are left once every cycle that can be freed is."""
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, uq.UserQuestionError))


async def code_of(ask: Awaitable[object]) -> str:
    """The code the ask fails with. (`except … as e` unbinds `e`: no frame keeps the error, as
    a `pytest.raises` object kept in the frame would — a cycle of the test's own.)"""
    try:
        await ask
    except uq.UserQuestionError as e:
        return e.code
    raise AssertionError("the ask did not fail")


async def withdrawn(ctx: uq.Context, inbox: uq.QuestionInbox) -> str:
    controller = uq.AbortController()
    task = asyncio.ensure_future(
        ctx.user_questions.ask({"questions": Q, "signal": controller.signal})
    )
    await asyncio.sleep(0)
    controller.abort()
    return await code_of(task)


async def timed_out(ctx: uq.Context, inbox: uq.QuestionInbox) -> str:
    return await code_of(ctx.user_questions.ask({"questions": Q, "timeout": 0.001}))


async def cancelled(ctx: uq.Context, inbox: uq.QuestionInbox) -> str:
    task = asyncio.ensure_future(ctx.user_questions.ask({"questions": Q}))
    await asyncio.sleep(0)
    inbox.cancel(inbox.pending()[0]["ticket"])
    return await code_of(task)


async def context_closed(ctx: uq.Context, inbox: uq.QuestionInbox) -> str:
    own = uq.Context()
    own.user_questions.register_provider(uq.QuestionInbox())
    task = asyncio.ensure_future(own.user_questions.ask({"questions": Q}))
    await asyncio.sleep(0)
    own.close()
    return await code_of(task)


@pytest.mark.parametrize(
    ("settle", "code"),
    [
        (withdrawn, "ASK_ABORTED"),
        (timed_out, "ASK_TIMED_OUT"),
        (cancelled, "ASK_CANCELLED"),
        (context_closed, "ASK_ABORTED"),
    ],
)
async def test_an_ask_that_waited_and_failed_is_freed(
    settle: Callable[[uq.Context, uq.QuestionInbox], Awaitable[str]],
    code: str,
) -> None:
    ctx = uq.Context()
    inbox = uq.QuestionInbox()
    ctx.user_questions.register_provider(inbox)
    assert await settle(ctx, inbox) == code  # warm-up
    before = live_errors()
    for _ in range(200):
        assert await settle(ctx, inbox) == code
    # (200 asks that each kept their error would leave 200.)
    assert live_errors() - before < 5
    ctx.close()


def descriptors_on(path: Path) -> int:
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == str(path):
                count += 1
        except OSError:
            pass
    return count


async def test_a_closed_context_lets_its_journal_go_once_no_ask_waits(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    ctx = uq.Context(journal=path)
    ctx.user_questions.register_provider(uq.QuestionInbox())
    task = asyncio.ensure_future(ctx.user_questions.ask({"questions": Q}))
    await asyncio.sleep(0)
    assert descriptors_on(path) == 1
    ctx.close()
    with pytest.raises(uq.UserQuestionError) as info:
        await task
    assert info.value.code == "ASK_ABORTED"
    # The context is still held; its journal file is closed, every line written.
    assert descriptors_on(path) == 0
    events = [line.split('"event":"')[1].split('"')[0] for line in path.read_text().splitlines()]
    assert events == ["asked", "settled"]
    del ctx
