"""A provider that raises an interrupt (``KeyboardInterrupt``, ``SystemExit``: a
``BaseException`` that is not an ``Exception``, e.g. Ctrl-C while it waits in ``input()``)
as its ask starts: the interrupt reaches the asker, as it would from Python code calling the
provider, and the ask is withdrawn (``ASK_ABORTED``, the provider's signal fired, the journal's
``settled`` line written) so that nothing is left pending. Any other exception still settles
the ask ``PROVIDER_FAILED``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, Callable, Dict, List, Type

import pytest

import user_questions as uq
from conftest import YES, request


class Interrupting:
    """Raises `error` (once; later asks are answered) after watching its signal."""

    def __init__(self, error: Type[BaseException], is_async: bool) -> None:
        self.error = error
        self.is_async = is_async
        self.fired: List[bool] = []
        self.signals: List[uq.AbortSignal] = []

    def _start(self, req: Dict[str, Any]) -> bool:
        signal: uq.AbortSignal = req["signal"]
        self.signals.append(signal)
        signal.on_abort(lambda: self.fired.append(True))
        return len(self.signals) == 1

    def ask(self, req: Dict[str, Any]) -> Any:
        if self.is_async:
            return self._ask(req)
        if self._start(req):
            raise self.error
        return YES

    async def _ask(self, req: Dict[str, Any]) -> Any:
        if self._start(req):
            raise self.error
        return YES


def settled(path: Path) -> List[Dict[str, Any]]:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    return [
        {k: line[k] for k in ("ask", "outcome", "code")}
        for line in lines
        if line["event"] == "settled"
    ]


ABORTED = {"ask": 1, "outcome": "aborted", "code": "ASK_ABORTED"}


def check_withdrawn(provider: Interrupting, path: Path) -> None:
    # Withdrawn: its signal fired (its listener ran), the journal has it settled.
    assert provider.fired == [True]
    assert provider.signals[0].aborted
    assert settled(path) == [ABORTED]


@pytest.mark.parametrize("error", [KeyboardInterrupt, SystemExit])
@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
async def test_an_interrupt_from_a_provider_reaches_the_asker_of_ask(
    tmp_path: Path, error: Type[BaseException], is_async: bool
) -> None:
    path = tmp_path / "journal.jsonl"
    provider = Interrupting(error, is_async)
    with uq.Context(journal=path) as ctx:
        ctx.user_questions.register_provider(provider)
        with pytest.raises(error):
            await ctx.user_questions.ask(request())
        check_withdrawn(provider, path)
        # Nothing kept behind: the next ask on this thread is answered.
        assert await ctx.user_questions.ask(request()) == YES


@pytest.mark.parametrize("error", [KeyboardInterrupt, SystemExit])
def test_an_interrupt_from_a_sync_provider_reaches_the_asker_of_ask_blocking(
    tmp_path: Path, error: Type[BaseException]
) -> None:
    path = tmp_path / "journal.jsonl"
    provider = Interrupting(error, is_async=False)
    with uq.Context(journal=path) as ctx:
        ctx.user_questions.register_provider(provider)
        with pytest.raises(error):
            ctx.user_questions.ask_blocking(request())
        check_withdrawn(provider, path)
        assert ctx.user_questions.ask_blocking(request()) == YES


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
async def test_an_interrupt_from_a_provider_is_raised_by_the_tool_not_returned(
    tmp_path: Path, is_async: bool
) -> None:
    path = tmp_path / "journal.jsonl"
    provider = Interrupting(KeyboardInterrupt, is_async)
    with uq.Context(journal=path) as ctx:
        ctx.user_questions.register_provider(provider)
        tool = uq.AskUserQuestionTool(ctx)
        with pytest.raises(KeyboardInterrupt):
            await tool.execute({"questions": request()["questions"]})
        check_withdrawn(provider, path)
        assert (await tool.execute({"questions": request()["questions"]}))["isError"] is False


async def test_an_interrupt_from_a_provider_reaches_the_asker_of_review_plan(
    tmp_path: Path,
) -> None:
    path = tmp_path / "journal.jsonl"
    provider = Interrupting(KeyboardInterrupt, is_async=False)
    with uq.Context(journal=path) as ctx:
        ctx.user_questions.register_provider(provider)
        with pytest.raises(KeyboardInterrupt):
            await ctx.user_questions.review_plan("1. migrate")
        check_withdrawn(provider, path)


@pytest.mark.parametrize(
    "raise_it",
    [
        lambda: (_ for _ in ()).throw(asyncio.CancelledError()),
        lambda: (_ for _ in ()).throw(ValueError("bad")),
    ],
    ids=["CancelledError", "ValueError"],
)
def test_other_exceptions_still_settle_the_ask_provider_failed(
    ctx: uq.Context, raise_it: Callable[[], Any]
) -> None:
    class Provider:
        def ask(self, req: Dict[str, Any]) -> Any:
            return raise_it()

    ctx.user_questions.register_provider(Provider())
    with pytest.raises(uq.UserQuestionError) as raised:
        ctx.user_questions.ask_blocking(request())
    assert raised.value.code == "PROVIDER_FAILED"
