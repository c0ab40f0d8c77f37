"""ask_blocking's private event loop (one per thread, kept while idle, closed with its thread)
and asks that settle at once (no event-loop round trip)."""

from __future__ import annotations

import asyncio
import contextvars
import gc
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List

import pytest

import user_questions as uq
from conftest import YES, request

VAR: contextvars.ContextVar[str] = contextvars.ContextVar("VAR", default="unset")


class LoopRecorder:
    """A synchronous provider that records the event loop it was called under."""

    def __init__(self) -> None:
        self.loops: List[asyncio.AbstractEventLoop] = []

    def ask(self, req: Dict[str, Any]) -> Dict[str, Any]:
        self.loops.append(asyncio.get_running_loop())
        VAR.set("set by the provider")
        return YES


class AsyncLoopRecorder:
    def __init__(self) -> None:
        self.loops: List[asyncio.AbstractEventLoop] = []

    async def ask(self, req: Dict[str, Any]) -> Dict[str, Any]:
        self.loops.append(asyncio.get_running_loop())
        await asyncio.sleep(0)
        return YES


class Watching(LoopRecorder):
    """A synchronous provider that leaves its loop watching a socket."""

    def __init__(self, sock: socket.socket) -> None:
        super().__init__()
        self.sock = sock

    def ask(self, req: Dict[str, Any]) -> Dict[str, Any]:
        super().ask(req)
        asyncio.get_running_loop().add_reader(self.sock.fileno(), lambda: None)
        return YES


def _answer_when_pending(inbox: uq.QuestionInbox) -> None:
    """Answers the inbox's first question YES once there is one (on another thread)."""
    deadline = time.monotonic() + 10
    while not inbox.pending() and time.monotonic() < deadline:
        time.sleep(0.001)
    inbox.answer(inbox.pending()[0]["ticket"], YES)


def test_ask_blocking_keeps_one_idle_loop_per_thread(ctx: uq.Context) -> None:
    provider = LoopRecorder()
    ctx.user_questions.register_provider(provider)
    for _ in range(3):
        assert ctx.user_questions.ask_blocking(request()) == YES
    assert len(provider.loops) == 3 and len(set(map(id, provider.loops))) == 1
    loop = provider.loops[0]
    assert not loop.is_closed() and not loop.is_running()
    # The host's event-loop settings are untouched, and the provider ran in a copy of the
    # context (as in a task).
    assert asyncio._get_running_loop() is None
    assert VAR.get() == "unset"


def test_a_worker_thread_s_loop_is_its_own_and_closes_with_the_thread(ctx: uq.Context) -> None:
    provider = LoopRecorder()
    ctx.user_questions.register_provider(provider)
    ctx.user_questions.ask_blocking(request())
    results: List[Any] = []

    def work() -> None:
        results.append(ctx.user_questions.ask_blocking(request()))
        results.append(ctx.user_questions.ask_blocking(request()))

    thread = threading.Thread(target=work)
    thread.start()
    thread.join(10)
    gc.collect()
    assert results == [YES, YES]
    mine, theirs, again = provider.loops
    assert theirs is again and theirs is not mine
    assert theirs.is_closed()
    assert not mine.is_closed()


def test_an_async_provider_runs_on_the_kept_loop_call_after_call(ctx: uq.Context) -> None:
    provider = AsyncLoopRecorder()
    ctx.user_questions.register_provider(provider)
    for _ in range(3):
        assert ctx.user_questions.ask_blocking(request()) == YES
    assert len(set(map(id, provider.loops))) == 1
    assert not provider.loops[0].is_closed()
    assert asyncio.all_tasks(provider.loops[0]) == set()


def test_a_loop_left_with_work_on_it_is_shut_down_and_replaced(ctx: uq.Context) -> None:
    started: List[bool] = []
    cancelled = threading.Event()

    async def background() -> None:
        started.append(True)
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    class LeavesATask(LoopRecorder):
        def ask(self, req: Dict[str, Any]) -> Dict[str, Any]:
            super().ask(req)
            asyncio.get_running_loop().create_task(background())
            return YES

    provider = LeavesATask()
    ctx.user_questions.register_provider(provider)
    assert ctx.user_questions.ask_blocking(request()) == YES
    first = provider.loops[0]
    # Shut down as asyncio.run would: the task is cancelled, the loop closed.
    assert first.is_closed()
    assert cancelled.is_set() or not started
    assert ctx.user_questions.ask_blocking(request()) == YES
    assert provider.loops[1] is not first and provider.loops[1].is_closed()


def test_a_loop_left_watching_a_socket_is_closed(ctx: uq.Context) -> None:
    a, b = socket.socketpair()
    provider = Watching(a)
    ctx.user_questions.register_provider(provider)
    try:
        assert ctx.user_questions.ask_blocking(request()) == YES
        assert provider.loops[0].is_closed()
    finally:
        a.close()
        b.close()


def test_a_kept_loop_left_watching_a_socket_is_closed_after_a_waiting_ask_too(
    ctx: uq.Context,
) -> None:
    # A waiting ask leaves the package's own reader on the kept loop (two selector keys with
    # the self-pipe); a socket a provider leaves watched is still seen (the count moved).
    inbox = uq.QuestionInbox()
    registration = ctx.user_questions.register_provider(inbox)
    recorder = LoopRecorder()
    thread = threading.Thread(target=_answer_when_pending, args=(inbox,))
    thread.start()
    assert ctx.user_questions.ask_blocking(request()) == YES
    thread.join(10)
    registration.dispose()
    registration = ctx.user_questions.register_provider(recorder)
    for _ in range(2):  # kept: idle with its two keys, call after call
        assert ctx.user_questions.ask_blocking(request()) == YES
    kept = recorder.loops[0]
    assert recorder.loops[1] is kept and not kept.is_closed()
    assert len(kept._selector.get_map()) == 2  # type: ignore[attr-defined]
    registration.dispose()
    a, b = socket.socketpair()
    watching = Watching(a)
    ctx.user_questions.register_provider(watching)
    try:
        assert ctx.user_questions.ask_blocking(request()) == YES
        assert watching.loops[0] is kept and kept.is_closed()
    finally:
        a.close()
        b.close()


def test_a_loop_whose_default_executor_ran_is_shut_down(ctx: uq.Context) -> None:
    # The executor's threads are joined before ask_blocking returns (the autouse fixture
    # checks that no thread is left behind).
    class UsesTheExecutor(AsyncLoopRecorder):
        async def ask(self, req: Dict[str, Any]) -> Dict[str, Any]:
            self.loops.append(asyncio.get_running_loop())
            return await asyncio.get_running_loop().run_in_executor(None, lambda: YES)

    provider = UsesTheExecutor()
    ctx.user_questions.register_provider(provider)
    assert ctx.user_questions.ask_blocking(request()) == YES
    assert ctx.user_questions.ask_blocking(request()) == YES
    first, second = provider.loops
    assert first is not second and first.is_closed() and second.is_closed()


def test_errors_raise_at_once_and_keep_the_loop(ctx: uq.Context) -> None:
    with pytest.raises(uq.UserQuestionError) as info:
        ctx.user_questions.ask_blocking(request())
    assert info.value.code == "NO_PROVIDER"
    provider = LoopRecorder()
    ctx.user_questions.register_provider(provider)
    assert ctx.user_questions.ask_blocking(request()) == YES
    with pytest.raises(uq.UserQuestionError) as info:
        ctx.user_questions.ask_blocking({"questions": []})
    assert info.value.code == "EMPTY_QUESTIONS"
    assert ctx.user_questions.ask_blocking(request()) == YES
    first, second = provider.loops
    assert first is second and not first.is_closed()
    assert asyncio._get_running_loop() is None


def test_an_inbox_ask_blocking_waits_for_the_answer_from_another_thread(ctx: uq.Context) -> None:
    inbox = uq.QuestionInbox()
    ctx.user_questions.register_provider(inbox)
    for _ in range(3):
        thread = threading.Thread(target=_answer_when_pending, args=(inbox,))
        thread.start()
        assert ctx.user_questions.ask_blocking(request()) == YES
        thread.join(10)


def test_an_interrupted_ask_blocking_withdraws_the_ask(ctx: uq.Context) -> None:
    inbox = uq.QuestionInbox()
    ctx.user_questions.register_provider(inbox)
    timers: List[threading.Timer] = []
    resolved: List[Any] = []

    def interrupt_soon(event: Dict[str, Any]) -> None:
        if event["type"] != "requested":
            resolved.append(event["outcome"])
            return
        timers.append(threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGINT)))
        timers[-1].start()

    unsubscribe = inbox.subscribe(interrupt_soon)
    # Ctrl-C as in a terminal, whatever this process inherited: a process started in the
    # background by a non-interactive shell ignores SIGINT, and Python then leaves it ignored.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            ctx.user_questions.ask_blocking(request())
    finally:
        unsubscribe()
        for timer in timers:
            timer.join(10)
        signal.signal(signal.SIGINT, previous)
    # Withdrawn: the inbox holds nothing (it saw the ask resolved), and this thread's next
    # ask works.
    assert len(timers) == 1
    assert resolved == ["aborted"]
    assert inbox.pending() == [] and len(inbox) == 0
    with uq.Context() as other:
        other.user_questions.register_provider(uq.AutoResponder("first"))
        assert other.user_questions.ask_blocking(request()) == YES


async def test_an_ask_that_settles_at_once_needs_no_loop_iteration(ctx: uq.Context) -> None:
    ctx.user_questions.register_provider(uq.AutoResponder("first"))
    ran: List[bool] = []
    loop = asyncio.get_running_loop()
    loop.call_soon(ran.append, True)
    assert await ctx.user_questions.ask(request()) == YES
    result = await uq.AskUserQuestionTool(ctx).execute({"questions": request()["questions"]})
    assert result["isError"] is False and result["value"] == YES
    # Nothing above yielded to the loop: the callback scheduled first has not run yet.
    assert ran == []
    await asyncio.sleep(0)
    assert ran == [True]


EXIT_SCRIPT = """
import asyncio, atexit, os, sys, threading
# Registered before the package's own exit handler, so it runs after it.
atexit.register(lambda: print("closed" if sync.loops[0].is_closed() else "left open"))
import user_questions as uq
Q = {"questions": [{"id": "go", "question": "?", "options": [{"label": "Yes"}]}]}
A = {"answers": [{"id": "go", "selected": ["Yes"]}]}
class Async:
    def __init__(self):
        self.loops = []
    async def ask(self, req):
        self.loops.append(asyncio.get_running_loop())
        await asyncio.sleep(0)
        return A
class Loops:
    def __init__(self):
        self.loops = []
    def ask(self, req):
        self.loops.append(asyncio.get_running_loop())
        return A
ctx = uq.Context()
sync = Loops()
registration = ctx.user_questions.register_provider(sync)
assert ctx.user_questions.ask_blocking(Q) == A
registration()
provider = Async()
ctx.user_questions.register_provider(provider)
assert ctx.user_questions.ask_blocking(Q) == A
assert provider.loops == sync.loops
if sys.argv[1] == "fork":
    pid = os.fork()
    if pid == 0:
        # The child gets a loop of its own (the inherited one shares the parent's epoll).
        # It is left open: closing it would unregister the parent's descriptors.
        ok = ctx.user_questions.ask_blocking(Q) == A
        ok = ok and provider.loops[-1] is not sync.loops[0] and not sync.loops[0].is_closed()
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, status
    # The parent's kept loop still works after the child went.
    assert ctx.user_questions.ask_blocking(Q) == A
else:
    worker = threading.Thread(target=lambda: ctx.user_questions.ask_blocking(Q))
    worker.start()
    worker.join()
print("ok")
"""


@pytest.mark.parametrize("mode", ["exit", "fork"])
def test_kept_loops_close_cleanly_at_exit_and_after_fork(tmp_path: Any, mode: str) -> None:
    script = tmp_path / "kept_loops.py"
    script.write_text(EXIT_SCRIPT)
    done = subprocess.run(
        [sys.executable, "-W", "error", "-X", "dev", str(script), mode],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "ok\nclosed\n", "")
