"""Asking from several threads at once, each with its own event loop; ``ask_blocking`` while
an event loop runs on another thread (which may be an async provider's home loop); and what a
subscriber or signal listener raises when the core's deadline timer (a thread Python does
not know) caused its call."""

from __future__ import annotations

import asyncio
import sys
import threading
from typing import Any, Dict, List, Tuple

import pytest

import user_questions as uq
from conftest import YES, request


def test_asks_from_several_threads_each_on_its_own_loop_settle_in_order() -> None:
    """Deadlines passing on the core's timer thread wake each asker on its own loop (whichever
    loop drains the foreign queue); answers given from other threads reach theirs; every
    ticket's events come in order, requested then resolved."""
    inbox = uq.QuestionInbox()
    events: Dict[int, List[str]] = {}
    lock = threading.Lock()

    def record(event: Dict[str, Any]) -> None:
        with lock:
            events.setdefault(event["ticket"], []).append(event["type"])

    outcomes: Dict[int, List[Any]] = {}
    with uq.Context() as ctx:
        ctx.user_questions.register_provider(inbox)
        inbox.subscribe(record)

        def worker(n: int) -> None:
            async def asks() -> List[Any]:
                got: List[Any] = []
                for i in range(4):
                    # Odd threads' second asks are answered by another thread; the rest time out.
                    answered = n % 2 == 1 and i == 1
                    req = request() if answered else request(timeout=0.01 + 0.01 * (n % 3))
                    try:
                        got.append(await asyncio.wait_for(ctx.user_questions.ask(req), 10))
                    except uq.UserQuestionError as error:
                        got.append(error.code)
                return got

            outcomes[n] = asyncio.run(asks())

        def answerer(stop: threading.Event) -> None:
            while not stop.is_set():
                for pending in inbox.pending():
                    if "expiresAt" not in pending:
                        try:
                            inbox.answer(pending["ticket"], YES)
                        except uq.UserQuestionError:
                            pass
                stop.wait(0.005)

        stop = threading.Event()
        helper = threading.Thread(target=answerer, args=(stop,))
        helper.start()
        threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        stop.set()
        helper.join(10)
    expected = {
        n: ["ASK_TIMED_OUT", YES if n % 2 else "ASK_TIMED_OUT", "ASK_TIMED_OUT", "ASK_TIMED_OUT"]
        for n in range(6)
    }
    assert outcomes == expected
    assert len(events) == 24
    assert all(kinds == ["requested", "resolved"] for kinds in events.values())


class HomeLoop:
    """An event loop running on a thread of its own."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever)
        self.thread.start()

    def run(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(10)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


class AsyncProvider:
    def __init__(self) -> None:
        self.threads: List[str] = []

    async def ask(self, req: Dict[str, Any]) -> Any:
        self.threads.append(threading.current_thread().name)
        await asyncio.sleep(0.001)
        return YES


def test_ask_blocking_while_a_loop_runs_on_another_thread(ctx: uq.Context) -> None:
    """The other thread's loop answers (an inbox answered from it); an async provider
    registered there runs there while it runs, and on the asker's private loop once it
    stopped or closed."""
    home = HomeLoop()
    try:
        inbox = uq.QuestionInbox()
        with ctx.user_questions.register_provider(inbox):
            inbox.subscribe(
                lambda e: (
                    home.loop.call_soon_threadsafe(inbox.answer, e["ticket"], YES)
                    if e["type"] == "requested"
                    else None
                )
            )
            assert ctx.user_questions.ask_blocking(request(timeout=10)) == YES

        provider = AsyncProvider()

        async def register() -> uq.ProviderRegistration:
            return ctx.user_questions.register_provider(provider)

        with home.run(register()):
            assert ctx.user_questions.ask_blocking(request(timeout=10)) == YES
            home.stop()
            assert ctx.user_questions.ask_blocking(request(timeout=10)) == YES
            home.loop.close()
            assert ctx.user_questions.ask_blocking(request(timeout=10)) == YES
        assert provider.threads == [home.thread.name, "MainThread", "MainThread"]
    finally:
        if home.thread.is_alive():
            home.stop()
        home.loop.close()


@pytest.mark.parametrize("blocking", [False, True], ids=["ask", "ask_blocking"])
def test_what_a_deadline_s_callbacks_raise_goes_to_unraisablehook(
    ctx: uq.Context, monkeypatch: pytest.MonkeyPatch, blocking: bool
) -> None:
    """A deadline passes on the core's timer thread: the inbox subscribers and the provider's
    signal listeners it causes run on the asker's thread, before the asker resumes; what they
    raise (even `KeyboardInterrupt`) goes to `sys.unraisablehook`, delivery goes on, and the
    asker gets `ASK_TIMED_OUT`."""
    reported: List[Tuple[str, str]] = []
    monkeypatch.setattr(
        sys,
        "unraisablehook",
        lambda r: reported.append((type(r.exc_value).__name__, threading.current_thread().name)),
    )
    inbox = uq.QuestionInbox()
    ctx.user_questions.register_provider(inbox)
    seen: List[Tuple[str, str]] = []

    def broken(event: Dict[str, Any]) -> None:
        if event["type"] == "resolved":
            raise KeyboardInterrupt
        raise RuntimeError("the UI crashed")

    inbox.subscribe(broken)
    inbox.subscribe(lambda e: seen.append((e["type"], threading.current_thread().name)))

    async def ask() -> Any:
        return await asyncio.wait_for(ctx.user_questions.ask(request(timeout=0.02)), 20)

    with pytest.raises(uq.UserQuestionError) as settled:
        if blocking:
            ctx.user_questions.ask_blocking(request(timeout=0.02))
        else:
            asyncio.run(ask())
    assert settled.value.code == "ASK_TIMED_OUT"
    assert seen == [("requested", "MainThread"), ("resolved", "MainThread")]
    assert reported == [("RuntimeError", "MainThread"), ("KeyboardInterrupt", "MainThread")]


@pytest.mark.parametrize("blocking", [False, True], ids=["ask", "ask_blocking"])
def test_a_signal_listener_raising_at_a_deadline_goes_to_unraisablehook(
    ctx: uq.Context, monkeypatch: pytest.MonkeyPatch, blocking: bool
) -> None:
    reported: List[Tuple[str, str]] = []
    monkeypatch.setattr(
        sys,
        "unraisablehook",
        lambda r: reported.append((type(r.exc_value).__name__, threading.current_thread().name)),
    )
    calls: List[str] = []
    kept: List[Any] = []

    class Provider:
        def ask(self, req: Dict[str, Any]) -> Any:
            req["signal"].on_abort(lambda: 1 / 0)
            req["signal"].on_abort(lambda: calls.append(threading.current_thread().name))
            kept.append(asyncio.get_running_loop().create_future())
            return kept[-1]

    ctx.user_questions.register_provider(Provider())

    async def ask() -> Any:
        return await asyncio.wait_for(ctx.user_questions.ask(request(timeout=0.02)), 20)

    with pytest.raises(uq.UserQuestionError) as settled:
        if blocking:
            ctx.user_questions.ask_blocking(request(timeout=0.02))
        else:
            asyncio.run(ask())
    assert settled.value.code == "ASK_TIMED_OUT"
    assert calls == ["MainThread"]
    assert reported == [("ZeroDivisionError", "MainThread")]
