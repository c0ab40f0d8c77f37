"""Asking from Python: codes, cancellation, timeouts, aborts, several loops, ask_blocking,
many concurrent asks, context lifetime."""

from __future__ import annotations

import asyncio
import gc
import inspect
import os
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List

import pytest

import user_questions as uq
from conftest import QUESTION, YES, request

ABORTED = "ask_user_question was aborted before the user answered"
DISPOSED = "the user-questions provider was disposed before the user answered"


class Answering:
    """A synchronous provider that answers YES and records each request."""

    def __init__(self) -> None:
        self.requests: List[Dict[str, Any]] = []

    def ask(self, req: Dict[str, Any]) -> Dict[str, Any]:
        self.requests.append(req)
        return YES


class Waiting:
    """An async provider that waits until told (or cancelled), recording what happened."""

    def __init__(self) -> None:
        self.called = asyncio.Event()
        self.release = asyncio.Event()
        self.cancelled = asyncio.Event()
        self.signals: List[uq.AbortSignal] = []

    async def ask(self, req: Dict[str, Any]) -> Dict[str, Any]:
        self.signals.append(req["signal"])
        self.called.set()
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        return YES


async def _raises(coro: Any, code: str, message: str = "") -> uq.UserQuestionError:
    with pytest.raises(uq.UserQuestionError) as info:
        await coro
    assert info.value.code == code
    if message:
        assert info.value.message == message
    return info.value


async def test_an_answer_comes_back_as_a_dict(ctx: uq.Context) -> None:
    ctx.user_questions.register_provider(Answering())
    assert await ctx.user_questions.ask(request()) == YES


def test_asyncio_run_works_like_any_async_def(ctx: uq.Context) -> None:
    ctx.user_questions.register_provider(Answering())
    assert asyncio.run(ctx.user_questions.ask(request())) == YES


async def test_every_code_of_an_ask_is_reachable(ctx: uq.Context) -> None:
    svc = ctx.user_questions
    # NO_PROVIDER
    await _raises(svc.ask(request()), "NO_PROVIDER", "no user-questions provider is registered")
    provider = Answering()
    svc.register_provider(provider)
    # DUPLICATE_PROVIDER
    with pytest.raises(uq.UserQuestionError) as dup:
        svc.register_provider(Answering())
    assert (dup.value.code, dup.value.message) == (
        "DUPLICATE_PROVIDER",
        "a user-questions provider is already registered",
    )
    # ASK_ABORTED (before)
    controller = uq.AbortController()
    controller.abort()
    await _raises(svc.ask(request(signal=controller.signal)), "ASK_ABORTED", ABORTED)
    # EMPTY_QUESTIONS
    await _raises(
        svc.ask({"questions": []}),
        "EMPTY_QUESTIONS",
        "ask_user_question requires at least one question",
    )
    # CALLER_NOT_LIVE, DELEGATED_CALLER
    root, child = uq.Agent("root"), uq.Agent("child", delegation_depth=1)
    ctx.agents.enter(root)
    ctx.agents.enter(child, owner=root)
    await _raises(svc.ask(request(agent=uq.Agent("root"))), "CALLER_NOT_LIVE")
    await _raises(svc.ask(request(agent=child)), "DELEGATED_CALLER")
    # BAD_INTENT
    plan = {
        "id": "plan",
        "question": "Approve?",
        "detail": "1. do it",
        "options": [{"label": "Approve"}, {"label": "Revise"}],
        "intent": {"kind": "plan-review", "approve": "Ship"},
    }
    await _raises(
        svc.ask({"questions": [plan]}),
        "BAD_INTENT",
        'question plan declares intent plan-review whose approve label "Ship" names none of its options',
    )
    # INVALID_REQUEST: malformed, duplicate ids, wrong agent / signal types, JSON text
    await _raises(
        svc.ask({"questions": [{"id": 1, "question": "q"}]}),
        "INVALID_REQUEST",
        "questions[0].id must be a string",
    )
    await _raises(
        svc.ask({"questions": [QUESTION, QUESTION]}),
        "INVALID_REQUEST",
        'question id "go" appears more than once',
    )
    # Anything that is not an Agent is not the live caller (§3 #3), in its place in the order.
    for not_an_agent in ("root", 5, {"id": "root"}):
        await _raises(
            svc.ask(request(agent=not_an_agent)),
            "CALLER_NOT_LIVE",
            "human interaction requires the exact live calling agent when an agent is supplied",
        )
    aborted = uq.AbortController()
    aborted.abort()
    await _raises(svc.ask(request(agent="root", signal=aborted.signal)), "ASK_ABORTED")
    await _raises(svc.ask(request(signal=True)), "INVALID_REQUEST", "signal must be an AbortSignal")
    await _raises(svc.ask("{nope"), "INVALID_REQUEST")
    await _raises(svc.ask([]), "INVALID_REQUEST", "request must be an object")
    await _raises(
        svc.ask({"questions": [{"id": "a", "question": object()}]}),
        "INVALID_REQUEST",
        "questions[0].question must be a string",
    )
    assert provider.requests == []
    # A well-formed request as JSON text is asked.
    assert (
        await svc.ask(
            '{"questions": [{"id": "go", "question": "?", "options": [{"label": "Yes"}]}]}'
        )
        == YES
    )
    # strict answer checking: BAD_ANSWER
    svc.strict = True
    assert svc.strict
    await _raises(svc.ask({"questions": [{"id": "go", "question": "?"}]}), "BAD_ANSWER")
    svc.strict = False
    assert await svc.ask({"questions": [{"id": "go", "question": "?"}]}) == YES
    # AGENT_EXISTS, INVALID_ARGUMENT: see test_agents.py, test_after_close_*, test_ask_blocking_*.


async def test_the_validation_order_of_spec_section_3(ctx: uq.Context) -> None:
    controller = uq.AbortController()
    controller.abort()
    # Malformed input first, then the aborted signal, then emptiness, then the caller.
    await _raises(
        ctx.user_questions.ask({"questions": [{}], "signal": controller.signal}), "INVALID_REQUEST"
    )
    await _raises(
        ctx.user_questions.ask({"questions": [], "signal": controller.signal}), "ASK_ABORTED"
    )
    await _raises(
        ctx.user_questions.ask({"questions": [], "agent": uq.Agent("x")}), "EMPTY_QUESTIONS"
    )
    await _raises(ctx.user_questions.ask(request(agent=uq.Agent("x"))), "CALLER_NOT_LIVE")


async def test_cancelling_the_awaiting_task_withdraws_the_ask(ctx: uq.Context) -> None:
    provider = Waiting()
    ctx.user_questions.register_provider(provider)
    task = asyncio.ensure_future(ctx.user_questions.ask(request()))
    await provider.called.wait()
    assert not provider.signals[0].aborted
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.wait_for(provider.cancelled.wait(), 5)
    assert provider.signals[0].aborted


@pytest.mark.skipif(sys.version_info < (3, 11), reason="asyncio.timeout is new in 3.11")
async def test_asyncio_timeout_withdraws_the_ask(ctx: uq.Context) -> None:
    provider = Waiting()
    ctx.user_questions.register_provider(provider)
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.05):  # type: ignore[attr-defined]
            await ctx.user_questions.ask(request())
    await asyncio.wait_for(provider.cancelled.wait(), 5)
    assert provider.signals[0].aborted


async def test_wait_for_timeout_withdraws_the_ask(ctx: uq.Context) -> None:
    provider = Waiting()
    ctx.user_questions.register_provider(provider)
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(ctx.user_questions.ask(request()), 0.05)
    await asyncio.wait_for(provider.cancelled.wait(), 5)


async def test_abort_during_the_wait_settles_aborted_even_from_another_thread(
    ctx: uq.Context,
) -> None:
    provider = Waiting()
    ctx.user_questions.register_provider(provider)
    controller = uq.AbortController()
    task = asyncio.ensure_future(ctx.user_questions.ask(request(signal=controller.signal)))
    await provider.called.wait()
    thread = threading.Thread(target=controller.abort)
    thread.start()
    await _raises(task, "ASK_ABORTED", ABORTED)
    thread.join()
    await asyncio.wait_for(provider.cancelled.wait(), 5)
    assert provider.signals[0].aborted


async def test_disposing_the_provider_settles_waiting_asks(ctx: uq.Context) -> None:
    provider = Waiting()
    registration = ctx.user_questions.register_provider(provider)
    task = asyncio.ensure_future(ctx.user_questions.ask(request()))
    await provider.called.wait()
    registration.dispose()
    await _raises(task, "ASK_ABORTED", DISPOSED)
    await asyncio.wait_for(provider.cancelled.wait(), 5)
    await _raises(ctx.user_questions.ask(request()), "NO_PROVIDER")


async def test_closing_the_context_settles_waiting_asks_and_later_ones_fail() -> None:
    ctx = uq.Context()
    provider = Waiting()
    registration = ctx.user_questions.register_provider(provider)
    task = asyncio.ensure_future(ctx.user_questions.ask(request()))
    await provider.called.wait()
    with ctx:
        pass  # leaving the block closes it
    await _raises(task, "ASK_ABORTED", DISPOSED)
    assert not registration.active
    await _raises(ctx.user_questions.ask(request()), "NO_PROVIDER")
    with pytest.raises(uq.UserQuestionError) as info:
        ctx.user_questions.register_provider(Answering())
    assert info.value.code == "INVALID_ARGUMENT"
    ctx.close()  # idempotent
    await asyncio.wait_for(provider.cancelled.wait(), 5)


def test_a_collected_context_disposes_its_provider() -> None:
    ctx = uq.Context()
    registration = ctx.user_questions.register_provider(Answering())
    assert registration.active
    del ctx
    gc.collect()
    assert not registration.active


def test_several_event_loops_one_after_another(ctx: uq.Context) -> None:
    sync = Answering()
    registration = ctx.user_questions.register_provider(sync)
    for _ in range(3):
        assert asyncio.run(ctx.user_questions.ask(request())) == YES
    registration()

    class AsyncProvider:
        loops: List[asyncio.AbstractEventLoop] = []

        async def ask(self, req: Dict[str, Any]) -> Dict[str, Any]:
            self.loops.append(asyncio.get_running_loop())
            await asyncio.sleep(0)
            return YES

    async def register_then_ask() -> Dict[str, Any]:
        # Registered inside the first loop: that loop is its home while it runs.
        ctx.user_questions.register_provider(AsyncProvider())
        return await ctx.user_questions.ask(request())

    assert asyncio.run(register_then_ask()) == YES
    # The home loop is closed now: the next loops run the provider themselves.
    for _ in range(3):
        assert asyncio.run(ctx.user_questions.ask(request())) == YES
    assert len(set(map(id, AsyncProvider.loops))) >= 2
    assert all(loop.is_closed() for loop in AsyncProvider.loops)


def test_ask_blocking_from_a_worker_thread(ctx: uq.Context) -> None:
    ctx.user_questions.register_provider(Answering())
    results: List[Any] = []
    thread = threading.Thread(
        target=lambda: results.append(ctx.user_questions.ask_blocking(request()))
    )
    thread.start()
    thread.join(10)
    assert results == [YES]


def test_ask_blocking_with_an_async_provider_and_no_loop_anywhere(ctx: uq.Context) -> None:
    class AsyncProvider:
        async def ask(self, req: Dict[str, Any]) -> Dict[str, Any]:
            await asyncio.sleep(0.01)
            return YES

    ctx.user_questions.register_provider(AsyncProvider())
    assert ctx.user_questions.ask_blocking(request()) == YES
    # The host's own event-loop setting is left alone.
    assert asyncio._get_running_loop() is None


async def test_ask_blocking_from_a_worker_while_the_provider_s_home_loop_runs(
    ctx: uq.Context,
) -> None:
    main = threading.get_ident()
    seen: List[int] = []

    class HomeProvider:
        async def ask(self, req: Dict[str, Any]) -> Dict[str, Any]:
            seen.append(threading.get_ident())
            await asyncio.sleep(0)
            return YES

    ctx.user_questions.register_provider(HomeProvider())  # home: this test's loop
    answer = await asyncio.get_running_loop().run_in_executor(
        None, ctx.user_questions.ask_blocking, request()
    )
    assert answer == YES
    assert seen == [main]


async def test_ask_blocking_refuses_at_once_on_a_loop_thread(ctx: uq.Context) -> None:
    provider = Answering()
    ctx.user_questions.register_provider(provider)
    started = time.monotonic()
    with pytest.raises(uq.EventLoopThreadError) as info:
        ctx.user_questions.ask_blocking(request())
    assert time.monotonic() - started < 1
    assert isinstance(info.value, uq.UserQuestionError)
    assert isinstance(info.value, RuntimeError)
    assert info.value.code == "INVALID_ARGUMENT"
    assert provider.requests == []


async def test_a_thousand_concurrent_asks(ctx: uq.Context) -> None:
    class Echo:
        async def ask(self, req: Dict[str, Any]) -> Dict[str, Any]:
            await asyncio.sleep(0)
            return {"answers": [{"id": q["id"], "selected": []} for q in req["questions"]]}

    ctx.user_questions.register_provider(Echo())
    ids = [f"q{i}" for i in range(1000)]
    answers = await asyncio.wait_for(
        asyncio.gather(
            *(ctx.user_questions.ask({"questions": [{"id": i, "question": "?"}]}) for i in ids)
        ),
        60,
    )
    assert [a["answers"][0]["id"] for a in answers] == ids


async def test_a_thousand_concurrent_asks_half_of_them_cancelled(ctx: uq.Context) -> None:
    provider = Waiting()
    ctx.user_questions.register_provider(provider)
    tasks = [asyncio.ensure_future(ctx.user_questions.ask(request())) for _ in range(1000)]
    await asyncio.sleep(0)
    while len(provider.signals) < 1000:
        await asyncio.sleep(0.01)
    for task in tasks[::2]:
        task.cancel()
    # Every withdrawn ask's signal fires (and its provider task is cancelled) ...
    deadline = time.monotonic() + 10
    while sum(s.aborted for s in provider.signals) < 500 and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    assert [s.aborted for s in provider.signals] == [True, False] * 500
    # ... and the others still get their answers.
    provider.release.set()
    results = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 60)
    assert all(isinstance(r, asyncio.CancelledError) for r in results[::2])
    assert all(r == YES for r in results[1::2])
    assert not any(s.aborted for s in provider.signals[1::2])


async def test_the_per_ask_round_trip_is_cheap(ctx: uq.Context) -> None:
    """Not a benchmark: a sanity bound on the overhead of one ask with a sync provider."""
    ctx.user_questions.register_provider(Answering())
    n = 300
    started = time.perf_counter()
    for _ in range(n):
        await ctx.user_questions.ask(request())
    per_ask = (time.perf_counter() - started) / n
    assert per_ask < 0.01, f"{per_ask * 1e6:.0f} µs per ask"


def test_the_package_starts_no_threads_of_its_own(ctx: uq.Context) -> None:
    """Asks are polled on the asker's loop: no runtime threads that could touch Python while
    the interpreter shuts down."""

    def os_threads() -> int:
        return len(os.listdir("/proc/self/task"))

    before = os_threads()

    class AsyncProvider:
        async def ask(self, req: Dict[str, Any]) -> Dict[str, Any]:
            await asyncio.sleep(0)
            return YES

    ctx.user_questions.register_provider(AsyncProvider())

    async def many() -> None:
        await asyncio.gather(*(ctx.user_questions.ask(request()) for _ in range(100)))

    asyncio.run(many())
    ctx.user_questions.ask_blocking(request())
    assert os_threads() == before


def test_the_interpreter_exits_cleanly_right_after_asking(tmp_path: Any) -> None:
    script = tmp_path / "exit_right_after.py"
    script.write_text(
        "import asyncio, threading, user_questions as uq\n"
        "Q = {'questions': [{'id': 'go', 'question': '?'}]}\n"
        "A = {'answers': [{'id': 'go', 'selected': []}]}\n"
        "class P:\n"
        "    async def ask(self, req):\n"
        "        loop = asyncio.get_running_loop(); f = loop.create_future()\n"
        "        threading.Thread(target=lambda: loop.call_soon_threadsafe(f.set_result, A)).start()\n"
        "        return await f\n"
        "ctx = uq.Context(); ctx.user_questions.register_provider(P())\n"
        "print(asyncio.run(ctx.user_questions.ask(Q)) == A)\n"
    )
    for _ in range(10):
        done = subprocess.run(
            [sys.executable, "-W", "error", str(script)], capture_output=True, text=True, timeout=60
        )
        assert (done.returncode, done.stdout, done.stderr) == (0, "True\n", "")


async def test_every_code_reachable_from_python_is_raised() -> None:
    """All of §10 but OK (C only) and INTERNAL (a Rust panic at a boundary)."""
    seen = set()

    async def catch(awaitable_or_call: Any) -> None:
        try:
            result = awaitable_or_call() if callable(awaitable_or_call) else awaitable_or_call
            if inspect.isawaitable(result):
                await result
        except uq.UserQuestionError as error:
            seen.add(error.code)

    aborted = uq.AbortController()
    aborted.abort()
    with uq.Context() as ctx:
        svc = ctx.user_questions
        await catch(svc.ask(request()))  # NO_PROVIDER
        inbox = uq.QuestionInbox()
        svc.register_provider(inbox)
        await catch(lambda: svc.register_provider(uq.AutoResponder()))  # DUPLICATE_PROVIDER
        await catch(svc.ask(request(signal=aborted.signal)))  # ASK_ABORTED
        await catch(svc.ask({"questions": []}))  # EMPTY_QUESTIONS
        await catch(svc.ask(request(agent=uq.Agent("ghost"))))  # CALLER_NOT_LIVE
        root, child = uq.Agent("root"), uq.Agent("child")
        ctx.agents.enter(root)
        ctx.agents.enter(child, root)
        await catch(lambda: ctx.agents.enter(uq.Agent("root")))  # AGENT_EXISTS
        await catch(svc.ask(request(agent=child)))  # DELEGATED_CALLER
        bad_intent = {"id": "p", "question": "?", "intent": {"kind": "plan-review", "approve": "x"}}
        await catch(svc.ask({"questions": [bad_intent]}))  # BAD_INTENT
        await catch(svc.ask({"questions": "nope"}))  # INVALID_REQUEST
        task = asyncio.ensure_future(svc.ask(request()))
        await asyncio.sleep(0)
        await catch(lambda: inbox.answer(1, {"answers": []}))  # BAD_ANSWER
        await catch(lambda: inbox.answer(9, YES))  # NOT_PENDING
        inbox.cancel(1)
        await catch(task)  # ASK_CANCELLED
        await catch(lambda: inbox.cancel(1))  # ALREADY_RESOLVED
        task = asyncio.ensure_future(svc.ask(request()))
        await asyncio.sleep(0)
        inbox.fail(2, "gone")
        await catch(task)  # PROVIDER_FAILED
        await catch(lambda: svc.ask_blocking(request()))  # INVALID_ARGUMENT
        await catch(svc.ask(request(timeout=0.001)))  # ASK_TIMED_OUT
    assert seen == set(uq.CODES) - {"OK", "INTERNAL"}


async def test_plain_dicts_and_other_shapes_read_alike(ctx: uq.Context) -> None:
    # Requests and answers of the usual shape (dicts, lists, str, bool) are read directly;
    # anything else (tuples, unknown keys, other mappings inside) through the JSON path. Both
    # must give the provider, the asker and the inbox the same data.
    full = {
        "id": "plan",
        "question": "Approve?",
        "header": "Plan",
        "detail": "the plan",
        "options": [{"label": "Yes", "description": "ship it"}, {"label": "No"}],
        "multiSelect": False,
        "intent": {"kind": "plan-review", "approve": "Yes"},
    }
    other_shape = {**full, "options": tuple(full["options"]), "extra": object()}
    seen: List[Any] = []

    class Echo:
        def __init__(self, answer: Any) -> None:
            self.answer = answer

        def ask(self, req: Dict[str, Any]) -> Any:
            seen.append(req["questions"])
            return self.answer

    answers = [
        {"answers": [{"id": "plan", "selected": ["Yes"], "custom": "fine"}]},
        {"answers": ({"id": "plan", "selected": ("Yes",), "custom": "fine", "x": 1},)},
    ]
    results = []
    for question in (full, other_shape):
        for answer in answers:
            with ctx.user_questions.register_provider(Echo(answer)):
                results.append(await ctx.user_questions.ask({"questions": [question]}))
    assert all(s == [full] for s in seen)
    assert all(r == answers[0] for r in results)
    responder = uq.AutoResponder("first", approve_intents=True)
    assert responder.answer([full]) == responder.answer([other_shape])
    assert responder.ask({"questions": [full]}) == responder.ask({"questions": (other_shape,)})
    # Malformed input still fails with the core's own messages.
    bad = {**full, "multiSelect": "no"}
    with pytest.raises(uq.UserQuestionError) as info:
        await ctx.user_questions.ask({"questions": [bad]})
    assert info.value.message == "questions[0].multiSelect must be a boolean"


async def test_a_string_that_is_not_utf8_is_malformed_and_leaves_no_error_behind(
    ctx: uq.Context,
) -> None:
    provider = Answering()
    ctx.user_questions.register_provider(provider)
    lone = "\ud800"
    await _raises(
        ctx.user_questions.ask({"questions": [{"id": lone, "question": "q"}]}),
        "INVALID_REQUEST",
        "questions[0].id must be a string",
    )
    with pytest.raises(uq.UserQuestionError) as info:
        await ctx.user_questions.ask({"questions": [QUESTION], "key": lone})
    assert info.value.code == "INVALID_REQUEST"
    assert provider.requests == []
    assert await ctx.user_questions.ask(request()) == YES


async def test_closing_a_waiting_ask_s_coroutine_withdraws_the_ask(ctx: uq.Context) -> None:
    inbox = uq.QuestionInbox()
    ctx.user_questions.register_provider(inbox)
    events: List[Dict[str, Any]] = []
    inbox.subscribe(events.append)
    coroutine = ctx.user_questions.ask(request())
    coroutine.send(None)  # runs until the ask waits (on its asyncio future)
    assert len(inbox) == 1
    coroutine.close()  # as when its task is collected unfinished
    assert len(inbox) == 0
    assert [e["type"] for e in events] == ["requested", "resolved"]
    assert events[-1]["outcome"] == "aborted"


def test_an_ask_driven_with_no_loop_settles_at_once_or_is_withdrawn(ctx: uq.Context) -> None:
    # The running loop is looked up only when an ask has to wait: an ask settled at once needs
    # none; one that would wait, with no loop to wait on, is withdrawn and raises.
    answering = ctx.user_questions.register_provider(Answering())
    coroutine = ctx.user_questions.ask(request())
    with pytest.raises(StopIteration) as stopped:
        coroutine.send(None)
    assert stopped.value.value == YES
    answering.dispose()
    inbox = uq.QuestionInbox()
    ctx.user_questions.register_provider(inbox)
    events: List[Dict[str, Any]] = []
    inbox.subscribe(events.append)
    coroutine = ctx.user_questions.ask(request())
    with pytest.raises(RuntimeError, match="inside a running event loop"):
        coroutine.send(None)
    assert len(inbox) == 0
    assert [e["type"] for e in events] == ["requested", "resolved"]
    assert events[-1]["outcome"] == "aborted"
