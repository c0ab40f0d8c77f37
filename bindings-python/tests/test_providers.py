"""Python providers: sync and async, answering from another thread, failing, being withdrawn,
living on another loop, losing their loop."""

from __future__ import annotations

import asyncio
import contextvars
import copy
import gc
import threading
from typing import Any, Dict, List, Optional

import pytest

import user_questions as uq
from conftest import YES, request

NOT_AN_ANSWER = "the user-questions provider answered with something that is not an answer: "


async def _error(ctx: uq.Context, req: Optional[Dict[str, Any]] = None) -> uq.UserQuestionError:
    with pytest.raises(uq.UserQuestionError) as info:
        await asyncio.wait_for(ctx.user_questions.ask(req or request()), 10)
    return info.value


class Returning:
    def __init__(self, value: Any) -> None:
        self.value = value

    def ask(self, req: Dict[str, Any]) -> Any:
        return self.value


class Raising:
    def __init__(self, error: BaseException, is_async: bool) -> None:
        self.error = error
        self.is_async = is_async

    def ask(self, req: Dict[str, Any]) -> Any:
        if self.is_async:
            return self._ask()
        raise self.error

    async def _ask(self) -> Any:
        await asyncio.sleep(0)
        raise self.error


async def test_the_request_a_provider_gets(ctx: uq.Context) -> None:
    seen: List[Dict[str, Any]] = []

    class Recording:
        def ask(self, req: Dict[str, Any]) -> Dict[str, Any]:
            seen.append(req)
            return YES

    ctx.user_questions.register_provider(Recording())
    root = uq.Agent("root")
    ctx.agents.enter(root)
    await ctx.user_questions.ask(request(agent=root))
    await ctx.user_questions.ask(request())
    with_agent, without = seen
    assert with_agent["agent"] is root
    assert "agent" not in without
    assert with_agent["questions"] == request()["questions"]
    assert set(with_agent) == {"questions", "agent", "signal"}
    assert isinstance(with_agent["signal"], uq.AbortSignal)
    assert not with_agent["signal"].aborted


async def test_every_field_of_the_questions_and_the_answer_crosses_unchanged(
    ctx: uq.Context,
) -> None:
    # The questions a provider gets and the answer the asker gets are built field by field
    # (convert.rs), or copied from the asker's when those have exactly the known fields
    # (handoff.rs): each optional field appears exactly when it was given.
    questions: List[Dict[str, Any]] = [
        {
            "id": "plan",
            "question": "Approve?",
            "detail": "1. do it",
            "header": "Plan",
            "options": [{"label": "Yes", "description": "Go ahead"}, {"label": "No"}],
            "multiSelect": False,
            "intent": {"kind": "plan-review", "approve": "Yes"},
        },
        {"id": "bare", "question": "Anything else? \u00e9\U0001f600"},
        {"id": "many", "question": "Which?", "options": [], "multiSelect": True},
    ]
    answer = {
        "answers": [
            {"id": "plan", "selected": ["Yes"]},
            {"id": "bare", "selected": [], "custom": "n\u00e9 \U0001f600"},
            {"id": "many", "selected": []},
        ]
    }
    seen: List[Any] = []

    class Recording:
        def ask(self, req: Dict[str, Any]) -> Dict[str, Any]:
            seen.append(req["questions"])
            return answer

    ctx.user_questions.register_provider(Recording())
    got = await ctx.user_questions.ask({"questions": questions})
    assert seen == [questions]
    assert [list(q) for q in seen[0]] == [list(q) for q in questions]
    assert list(seen[0][0]["options"][0]) == ["label", "description"]
    assert got == answer
    assert [list(item) for item in got["answers"]] == [list(i) for i in answer["answers"]]
    # The AutoResponder's answer is built the same way (it never approves an intent itself).
    auto = uq.AutoResponder("first").answer(questions)
    assert auto == {
        "answers": [
            {"id": "plan", "selected": ["No"]},
            {"id": "bare", "selected": []},
            {"id": "many", "selected": []},
        ]
    }


async def test_the_provider_s_questions_are_its_own_copy(ctx: uq.Context) -> None:
    # Whether copied from the asker's (exactly the known fields) or built anew (other keys,
    # subclasses): equal data, never the asker's own dicts and lists.
    class Text(str):
        pass

    exact: List[Dict[str, Any]] = [
        {
            "options": [{"description": "Go ahead", "label": "Yes"}, {"label": "No"}],
            "question": "Approve?",
            "id": "go",
            "detail": "1. do it",
            "intent": {"approve": "Yes", "kind": "plan-review"},
        }
    ]
    other_keys: List[Dict[str, Any]] = [
        {"id": "go", "question": "Approve?", "options": [{"label": "Yes", "icon": "✓"}], "x": 1}
    ]
    subclass: List[Dict[str, Any]] = [{"id": "go", "question": Text("Approve?")}]
    seen: List[Any] = []

    class Mutating:
        def ask(self, req: Dict[str, Any]) -> Dict[str, Any]:
            questions = req["questions"]
            seen.append(copy.deepcopy(questions))
            questions[0]["question"] = "changed"
            questions[0].setdefault("options", []).append({"label": "added"})
            if "intent" in questions[0]:
                questions[0]["intent"]["kind"] = "changed"
            questions.append({"id": "added"})
            return YES

    ctx.user_questions.register_provider(Mutating())
    for questions in (exact, other_keys, subclass):
        before = copy.deepcopy(questions)
        assert await ctx.user_questions.ask({"questions": questions}) == YES
        assert questions == before  # the provider changed only its own copy
    assert seen[0] == exact
    assert seen[1] == [{"id": "go", "question": "Approve?", "options": [{"label": "Yes"}]}]
    assert seen[2] == [{"id": "go", "question": "Approve?"}]
    assert type(seen[2][0]["question"]) is str


async def test_the_asker_s_answer_is_its_own(ctx: uq.Context) -> None:
    # Never the provider's dicts and lists: changing them after the ask changes nothing.
    given: Dict[str, Any] = {"answers": [{"id": "go", "selected": ["Yes"], "custom": "now"}]}

    class Answering:
        async def ask(self, req: Dict[str, Any]) -> Dict[str, Any]:
            return given

    ctx.user_questions.register_provider(Answering())
    got = await ctx.user_questions.ask({"questions": [{"id": "go", "question": "Go?"}]})
    assert got == given
    assert got is not given and got["answers"] is not given["answers"]
    assert got["answers"][0] is not given["answers"][0]
    assert got["answers"][0]["selected"] is not given["answers"][0]["selected"]
    given["answers"][0]["selected"].append("No")
    given["answers"].append({"id": "more", "selected": []})
    assert got == {"answers": [{"id": "go", "selected": ["Yes"], "custom": "now"}]}


async def test_the_garbage_collector_runs_as_before_around_and_inside_every_ask(
    ctx: uq.Context,
) -> None:
    # It is held off only between reading the asker's questions and copying them for a
    # Python provider (handoff.rs): on again inside the provider and after every kind of ask;
    # left off when the host turned it off.
    inside: List[bool] = []

    class Looking:
        def ask(self, req: Dict[str, Any]) -> Dict[str, Any]:
            inside.append(gc.isenabled())
            return YES

    registration = ctx.user_questions.register_provider(Looking())
    assert await ctx.user_questions.ask(request()) == YES
    assert inside == [True] and gc.isenabled()
    with pytest.raises(uq.UserQuestionError):
        await ctx.user_questions.ask({"questions": []})
    assert gc.isenabled()
    registration.dispose()
    registration = ctx.user_questions.register_provider(uq.AutoResponder("first"))
    assert (await ctx.user_questions.ask(request()))["answers"]
    assert gc.isenabled()
    registration.dispose()
    ctx.user_questions.register_provider(Looking())
    gc.disable()
    try:
        assert await ctx.user_questions.ask(request()) == YES
        assert inside == [True, False] and not gc.isenabled()
    finally:
        gc.enable()


async def test_an_ask_started_in_a_provider_s_first_step_hands_its_provider_its_own_questions(
    ctx: uq.Context,
) -> None:
    inner_ctx = uq.Context()
    outer_questions = [{"id": "outer", "question": "Outer?", "options": [{"label": "Yes"}]}]
    inner_questions = [{"id": "inner", "question": "Inner?", "options": [{"label": "No"}]}]
    seen: Dict[str, Any] = {}

    class Inner:
        def ask(self, req: Dict[str, Any]) -> Dict[str, Any]:
            seen["inner"] = req["questions"]
            return {"answers": [{"id": "inner", "selected": ["No"]}]}

    class Outer:
        async def ask(self, req: Dict[str, Any]) -> Dict[str, Any]:
            seen["outer"] = req["questions"]
            inner = await inner_ctx.user_questions.ask({"questions": inner_questions})
            assert inner["answers"][0]["selected"] == ["No"]
            return {"answers": [{"id": "outer", "selected": ["Yes"]}]}

    with inner_ctx:
        inner_ctx.user_questions.register_provider(Inner())
        ctx.user_questions.register_provider(Outer())
        answer = await ctx.user_questions.ask({"questions": outer_questions})
    assert answer == {"answers": [{"id": "outer", "selected": ["Yes"]}]}
    assert seen == {"outer": outer_questions, "inner": inner_questions}


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
async def test_an_exception_in_a_provider_is_provider_failed_with_its_message(
    ctx: uq.Context, is_async: bool
) -> None:
    ctx.user_questions.register_provider(Raising(ValueError("the terminal went away"), is_async))
    error = await _error(ctx)
    assert (error.code, error.message) == ("PROVIDER_FAILED", "the terminal went away")


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
async def test_an_exception_without_a_message_is_named_by_its_type(
    ctx: uq.Context, is_async: bool
) -> None:
    ctx.user_questions.register_provider(Raising(KeyError(), is_async))
    error = await _error(ctx)
    assert (error.code, error.message) == ("PROVIDER_FAILED", "KeyError")


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
async def test_a_user_question_error_keeps_its_code(ctx: uq.Context, is_async: bool) -> None:
    ctx.user_questions.register_provider(
        Raising(
            uq.UserQuestionError("the user cancelled ask_user_question", "ASK_CANCELLED"), is_async
        )
    )
    error = await _error(ctx)
    assert (error.code, error.message) == ("ASK_CANCELLED", "the user cancelled ask_user_question")


async def test_a_user_question_error_of_an_unknown_code_is_provider_failed(ctx: uq.Context) -> None:
    ctx.user_questions.register_provider(Raising(uq.UserQuestionError("odd", "NOPE"), False))
    error = await _error(ctx)
    assert error.code == "PROVIDER_FAILED"
    assert error.message == 'the user-questions provider failed with an unknown code "NOPE": odd'


@pytest.mark.parametrize(
    ("returned", "reason"),
    [
        (None, "answer must be an object"),
        ({}, "answers must be an array"),
        ({"answers": [{"id": 1, "selected": []}]}, "answers[0].id must be a string"),
        (
            {"answers": [{"id": "go", "selected": "Yes"}]},
            "answers[0].selected must be an array of strings",
        ),
    ],
)
async def test_a_return_value_that_is_not_an_answer_is_provider_failed(
    ctx: uq.Context, returned: Any, reason: str
) -> None:
    ctx.user_questions.register_provider(Returning(returned))
    error = await _error(ctx)
    assert (error.code, error.message) == ("PROVIDER_FAILED", NOT_AN_ANSWER + reason)


async def test_answers_pass_through_unchecked_unless_strict(ctx: uq.Context) -> None:
    odd = {"answers": [{"id": "go", "selected": ["Maybe"], "custom": "x"}]}
    ctx.user_questions.register_provider(Returning(odd))
    assert await ctx.user_questions.ask(request()) == odd
    ctx.user_questions.strict = True
    assert (await _error(ctx)).code == "BAD_ANSWER"


async def test_an_async_provider_may_return_any_awaitable(ctx: uq.Context) -> None:
    class FutureProvider:
        def ask(self, req: Dict[str, Any]) -> "asyncio.Future[Dict[str, Any]]":
            future: asyncio.Future[Dict[str, Any]] = asyncio.get_running_loop().create_future()
            asyncio.get_running_loop().call_later(0.01, future.set_result, YES)
            return future

    ctx.user_questions.register_provider(FutureProvider())
    assert await ctx.user_questions.ask(request()) == YES


async def test_a_provider_answering_from_another_thread(ctx: uq.Context) -> None:
    threads: List[threading.Thread] = []

    class Threaded:
        async def ask(self, req: Dict[str, Any]) -> Dict[str, Any]:
            loop = asyncio.get_running_loop()
            future: asyncio.Future[Dict[str, Any]] = loop.create_future()

            def answer() -> None:
                loop.call_soon_threadsafe(future.set_result, YES)

            thread = threading.Thread(target=answer)
            threads.append(thread)
            thread.start()
            return await future

    ctx.user_questions.register_provider(Threaded())
    assert await ctx.user_questions.ask(request()) == YES
    for thread in threads:
        thread.join()


async def test_a_cancelled_provider_task_is_provider_failed(ctx: uq.Context) -> None:
    class SelfCancelling:
        async def ask(self, req: Dict[str, Any]) -> Dict[str, Any]:
            raise asyncio.CancelledError()

    ctx.user_questions.register_provider(SelfCancelling())
    error = await _error(ctx)
    assert error.code == "PROVIDER_FAILED"
    assert "cancelled" in error.message


async def test_withdrawal_fires_the_signal_callbacks_and_cancels_the_coroutine(
    ctx: uq.Context,
) -> None:
    fired = threading.Event()
    cancelled = asyncio.Event()
    started = asyncio.Event()

    class Watching:
        async def ask(self, req: Dict[str, Any]) -> Dict[str, Any]:
            req["signal"].on_abort(fired.set)
            started.set()
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                cancelled.set()
                raise
            return YES

    ctx.user_questions.register_provider(Watching())
    task = asyncio.ensure_future(ctx.user_questions.ask(request()))
    await started.wait()
    task.cancel()
    await asyncio.wait_for(cancelled.wait(), 5)
    assert fired.is_set()


async def test_the_registration_is_callable_disposable_and_a_context_manager(
    ctx: uq.Context,
) -> None:
    svc = ctx.user_questions
    first = svc.register_provider(Returning(YES))
    assert first.active and svc.has_provider
    first()
    assert not first.active and not svc.has_provider
    with svc.register_provider(Returning(YES)) as second:
        assert await svc.ask(request()) == YES
        first.dispose()  # stale: does not remove the later provider
        first()
        assert second.active
    assert not second.active
    assert not svc.has_provider
    with pytest.raises(TypeError):
        svc.register_provider(object())  # type: ignore[arg-type]


async def test_a_provider_on_another_thread_s_loop_runs_there(ctx: uq.Context) -> None:
    ready = threading.Event()
    home: Dict[str, Any] = {}
    seen: List[int] = []

    class HomeProvider:
        async def ask(self, req: Dict[str, Any]) -> Dict[str, Any]:
            seen.append(threading.get_ident())
            await asyncio.sleep(0)
            return YES

    async def ui_thread_main() -> None:
        home["loop"] = asyncio.get_running_loop()
        home["stop"] = asyncio.Event()
        ctx.user_questions.register_provider(HomeProvider())
        ready.set()
        await home["stop"].wait()

    thread = threading.Thread(target=asyncio.run, args=(ui_thread_main(),))
    thread.start()
    ready.wait(5)
    try:
        assert await ctx.user_questions.ask(request()) == YES
        assert seen == [thread.ident]
    finally:
        home["loop"].call_soon_threadsafe(home["stop"].set)
        thread.join(5)


async def test_a_provider_whose_loop_ends_while_it_waits_does_not_hang(ctx: uq.Context) -> None:
    ready = threading.Event()
    home: Dict[str, Any] = {}

    class Forever:
        async def ask(self, req: Dict[str, Any]) -> Dict[str, Any]:
            home["asked"].set()
            await asyncio.sleep(3600)
            return YES

    async def ui_thread_main() -> None:
        home["loop"] = asyncio.get_running_loop()
        home["stop"] = asyncio.Event()
        home["asked"] = asyncio.Event()
        ctx.user_questions.register_provider(Forever())
        ready.set()
        await home["asked"].wait()  # the loop ends once the provider waits; asyncio.run
        # then cancels the provider's task and closes the loop.

    thread = threading.Thread(target=asyncio.run, args=(ui_thread_main(),))
    thread.start()
    ready.wait(5)
    error = await _error(ctx)
    thread.join(5)
    assert error.code == "PROVIDER_FAILED"
    assert "cancelled" in error.message


async def test_a_returned_future_nobody_keeps_settles_instead_of_hanging(ctx: uq.Context) -> None:
    class Forgetful:
        def ask(self, req: Dict[str, Any]) -> "asyncio.Future[Dict[str, Any]]":
            return asyncio.get_running_loop().create_future()  # no one can ever resolve it

    ctx.user_questions.register_provider(Forgetful())
    error = await _error(ctx)
    assert error.code == "PROVIDER_FAILED"
    assert error.message == (
        "the user-questions provider's task was destroyed before it finished "
        "(was its event loop closed?)"
    )


async def test_a_provider_task_abandoned_by_a_closed_loop_settles_when_collected(
    ctx: uq.Context,
) -> None:
    ready = threading.Event()
    asked = threading.Event()

    class Abandoned:
        async def ask(self, req: Dict[str, Any]) -> Dict[str, Any]:
            asked.set()
            # A future nothing else references: once its loop is gone, this task is garbage.
            await asyncio.get_running_loop().create_future()
            return YES

    def ui_thread() -> None:
        loop = asyncio.new_event_loop()

        async def main() -> None:
            ctx.user_questions.register_provider(Abandoned())
            ready.set()
            await asyncio.sleep(0.3)  # the provider's task starts meanwhile

        loop.run_until_complete(main())
        loop.close()  # without cancelling the provider's task: it is abandoned

    thread = threading.Thread(target=ui_thread)
    thread.start()
    ready.wait(5)
    task = asyncio.ensure_future(ctx.user_questions.ask(request()))
    await asyncio.sleep(0)
    thread.join(5)
    assert asked.is_set()
    await asyncio.sleep(0.05)
    assert not task.done()
    gc.collect()
    with pytest.raises(uq.UserQuestionError) as info:
        await asyncio.wait_for(task, 10)
    assert info.value.code == "PROVIDER_FAILED"
    assert "destroyed" in info.value.message


# An `async def` provider on the asker's loop starts at once, as its own task (eager start):
# the first step runs inside `ask`, the rest (if it waits) in that task.


async def test_an_async_provider_runs_as_its_own_task_from_its_first_step(
    ctx: uq.Context,
) -> None:
    seen: List[Optional["asyncio.Task[Any]"]] = []

    class Looking:
        async def ask(self, req: Dict[str, Any]) -> Dict[str, Any]:
            seen.append(asyncio.current_task())
            await asyncio.sleep(0)
            seen.append(asyncio.current_task())
            return YES

    ctx.user_questions.register_provider(Looking())
    asker = asyncio.current_task()
    assert await ctx.user_questions.ask(request()) == YES
    assert len(seen) == 2 and seen[0] is seen[1]
    assert seen[0] is not None and seen[0] is not asker
    assert asyncio.current_task() is asker


async def test_a_timeout_inside_an_async_provider_binds_to_its_own_task(
    ctx: uq.Context,
) -> None:
    if not hasattr(asyncio, "timeout"):
        pytest.skip("asyncio.timeout is Python 3.11+")

    class TimingOut:
        async def ask(self, req: Dict[str, Any]) -> Dict[str, Any]:
            try:
                async with asyncio.timeout(0.01):  # type: ignore[attr-defined]
                    await asyncio.sleep(3600)
            except TimeoutError:
                return YES
            raise AssertionError("not timed out")

    ctx.user_questions.register_provider(TimingOut())
    assert await asyncio.wait_for(ctx.user_questions.ask(request()), 10) == YES


async def test_an_async_provider_keeps_its_context_across_its_first_wait(
    ctx: uq.Context,
) -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="asker")
    seen: List[str] = []

    class Setting:
        async def ask(self, req: Dict[str, Any]) -> Dict[str, Any]:
            seen.append(var.get())
            var.set("provider")
            await asyncio.sleep(0)
            seen.append(var.get())
            return YES

    ctx.user_questions.register_provider(Setting())
    var.set("caller")
    assert await ctx.user_questions.ask(request()) == YES
    assert seen == ["caller", "provider"]
    assert var.get() == "caller"


async def test_an_async_provider_answering_at_once_leaves_nothing_behind(
    ctx: uq.Context,
) -> None:
    class AtOnce:
        async def ask(self, req: Dict[str, Any]) -> Dict[str, Any]:
            return YES

    class FailingAtOnce:
        async def ask(self, req: Dict[str, Any]) -> Dict[str, Any]:
            raise ValueError("no")

    registration = ctx.user_questions.register_provider(AtOnce())
    for _ in range(3):
        assert await ctx.user_questions.ask(request()) == YES
    # Nothing is left for the loop to run: the providers' tasks are done already.
    assert [t for t in asyncio.all_tasks() if not t.done()] == [asyncio.current_task()]
    registration.dispose()
    ctx.user_questions.register_provider(FailingAtOnce())
    error = await _error(ctx)
    assert (error.code, error.message) == ("PROVIDER_FAILED", "no")
    # The fixture checks no task is left pending and nothing unhandled reached the loop.


async def test_an_async_provider_cancelling_its_own_task_in_its_first_step(
    ctx: uq.Context,
) -> None:
    class CancelsItself:
        async def ask(self, req: Dict[str, Any]) -> Dict[str, Any]:
            task = asyncio.current_task()
            assert task is not None
            task.cancel()
            await asyncio.sleep(3600)
            return YES

    ctx.user_questions.register_provider(CancelsItself())
    error = await _error(ctx)
    assert error.code == "PROVIDER_FAILED"
    assert "cancelled" in error.message


async def test_a_withdrawn_async_provider_sees_its_signal_before_the_cancellation(
    ctx: uq.Context,
) -> None:
    order: List[str] = []
    started = asyncio.Event()
    finished = asyncio.Event()

    class Watching:
        async def ask(self, req: Dict[str, Any]) -> Dict[str, Any]:
            req["signal"].on_abort(lambda: order.append("signal"))
            started.set()
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                order.append("provider cancelled")
                finished.set()
                raise
            return YES

    ctx.user_questions.register_provider(Watching())
    task = asyncio.ensure_future(ctx.user_questions.ask(request()))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    order.append("asker resumed")
    await asyncio.wait_for(finished.wait(), 5)
    assert order[0] == "signal"
    assert sorted(order[1:]) == ["asker resumed", "provider cancelled"]


# The task an async provider's first step runs as is made once per loop and used again while
# the coroutines answer in their first step without touching it (the spare task, eager.rs):
# none of that may show.


async def test_a_provider_that_keeps_its_task_finds_it_done_after_answering_at_once(
    ctx: uq.Context,
) -> None:
    kept: List["asyncio.Task[Any]"] = []

    class Keeping:
        async def ask(self, req: Dict[str, Any]) -> Dict[str, Any]:
            task = asyncio.current_task()
            assert task is not None
            kept.append(task)
            return YES

    ctx.user_questions.register_provider(Keeping())
    for _ in range(3):
        assert await ctx.user_questions.ask(request()) == YES
    assert len(kept) == 3 and len({id(t) for t in kept}) == 3
    assert all(t.done() and t.result() is None for t in kept)
    assert all(t is not asyncio.current_task() for t in kept)


async def test_a_provider_watching_or_cancelling_its_task_at_once_leaves_the_next_ask_alone(
    ctx: uq.Context,
) -> None:
    watched: List[str] = []
    tasks: List[Optional["asyncio.Task[Any]"]] = []
    cancelling: List[int] = []

    class Watching:
        async def ask(self, req: Dict[str, Any]) -> Dict[str, Any]:
            task = asyncio.current_task()
            assert task is not None
            task.add_done_callback(lambda _t: watched.append("done"))
            return YES

    class CancellingAtOnce:
        async def ask(self, req: Dict[str, Any]) -> Dict[str, Any]:
            task = asyncio.current_task()
            assert task is not None
            task.cancel()
            return YES

    class Waiting:
        async def ask(self, req: Dict[str, Any]) -> Dict[str, Any]:
            task = asyncio.current_task()
            assert task is not None
            tasks.append(task)
            cancelling.append(task.cancelling())
            await asyncio.sleep(0)
            tasks.append(asyncio.current_task())
            return YES

    registration = ctx.user_questions.register_provider(Watching())
    assert await ctx.user_questions.ask(request()) == YES
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    # The callback ran: the task it watched ended (it is not kept for a later ask).
    assert watched == ["done"]
    registration.dispose()
    registration = ctx.user_questions.register_provider(CancellingAtOnce())
    assert await ctx.user_questions.ask(request()) == YES
    registration.dispose()
    ctx.user_questions.register_provider(Waiting())
    # Neither the watched task nor the cancelled one is the next provider's.
    assert await ctx.user_questions.ask(request()) == YES
    assert cancelling == [0]
    assert len(tasks) == 2 and tasks[0] is tasks[1]
    assert watched == ["done"]


async def test_a_waiting_provider_task_is_listed_and_runs_in_its_ask_s_context(
    ctx: uq.Context,
) -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    started = asyncio.Event()
    release = asyncio.Event()
    seen: List[str] = []
    provider_tasks: List[Optional["asyncio.Task[Any]"]] = []

    class AtOnce:
        async def ask(self, req: Dict[str, Any]) -> Dict[str, Any]:
            seen.append(var.get())
            var.set("at once")
            return YES

    class Waiting:
        async def ask(self, req: Dict[str, Any]) -> Dict[str, Any]:
            provider_tasks.append(asyncio.current_task())
            seen.append(var.get())
            started.set()
            await release.wait()
            seen.append(var.get())
            provider_tasks.append(asyncio.current_task())
            return YES

    registration = ctx.user_questions.register_provider(AtOnce())
    var.set("first asker")
    assert await ctx.user_questions.ask(request()) == YES
    registration.dispose()
    ctx.user_questions.register_provider(Waiting())
    var.set("second asker")
    asking = asyncio.ensure_future(ctx.user_questions.ask(request()))
    await started.wait()
    var.set("changed after")
    provider = provider_tasks[0]
    assert provider is not None and provider in asyncio.all_tasks()
    assert not provider.done()
    release.set()
    assert await asking == YES
    assert seen == ["first asker", "second asker", "second asker"]
    assert provider_tasks[1] is provider
    assert var.get() == "changed after"


async def test_an_ask_nested_in_a_provider_s_first_step_runs_as_a_task_of_its_own() -> None:
    inner_ctx = uq.Context()
    outer_ctx = uq.Context()
    seen: Dict[str, Optional["asyncio.Task[Any]"]] = {}

    class Inner:
        async def ask(self, req: Dict[str, Any]) -> Dict[str, Any]:
            seen["inner"] = asyncio.current_task()
            return YES

    class Outer:
        async def ask(self, req: Dict[str, Any]) -> Dict[str, Any]:
            seen["outer before"] = asyncio.current_task()
            answer = await inner_ctx.user_questions.ask(request())
            seen["outer after"] = asyncio.current_task()
            return answer

    with inner_ctx, outer_ctx:
        inner_ctx.user_questions.register_provider(Inner())
        outer_ctx.user_questions.register_provider(Outer())
        asker = asyncio.current_task()
        for _ in range(3):
            assert await outer_ctx.user_questions.ask(request()) == YES
            assert seen["outer before"] is seen["outer after"]
            assert seen["inner"] is not None and seen["inner"] is not seen["outer before"]
            assert asker not in (seen["inner"], seen["outer before"])
            assert asyncio.current_task() is asker
        assert [t for t in asyncio.all_tasks() if not t.done()] == [asker]


def test_a_loop_whose_providers_answered_at_once_ends_and_is_collected_cleanly(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # asyncio.run cancels and awaits every task left at its end: a spare task it could see
    # would hang it; one reported when collected would log "Task was destroyed but it is
    # pending!".
    class AtOnce:
        async def ask(self, req: Dict[str, Any]) -> Dict[str, Any]:
            return YES

    async def main() -> int:
        with uq.Context() as context:
            context.user_questions.register_provider(AtOnce())
            for _ in range(5):
                assert await context.user_questions.ask(request()) == YES
        return len(asyncio.all_tasks())

    results: List[int] = []
    runner = threading.Thread(target=lambda: results.append(asyncio.run(main())))
    with caplog.at_level("ERROR", logger="asyncio"):
        runner.start()
        runner.join(30)
        assert not runner.is_alive(), "asyncio.run did not end"
        gc.collect()
    assert results == [1]
    assert not [r for r in caplog.records if "destroyed" in r.getMessage()]


class _NamingItsTask:
    """An async provider answering at once that records its task's name (not the task:
    keeping it would end a spare task)."""

    def __init__(self) -> None:
        self.names: List[str] = []

    async def ask(self, req: Dict[str, Any]) -> Dict[str, Any]:
        task = asyncio.current_task()
        assert task is not None
        self.names.append(task.get_name())
        return YES


class _WaitingOnce:
    """An async provider that waits once, recording its task before and after."""

    def __init__(self) -> None:
        self.tasks: List[Optional["asyncio.Task[Any]"]] = []

    async def ask(self, req: Dict[str, Any]) -> Dict[str, Any]:
        self.tasks.append(asyncio.current_task())
        await asyncio.sleep(0)
        self.tasks.append(asyncio.current_task())
        return YES


async def test_async_providers_answering_at_once_share_one_spare_task_per_loop(
    ctx: uq.Context,
) -> None:
    provider = _NamingItsTask()
    asker = asyncio.current_task()
    assert asker is not None
    ctx.user_questions.register_provider(provider)
    for _ in range(3):
        assert await ctx.user_questions.ask(request()) == YES
    assert len(provider.names) == 3 and len(set(provider.names)) == 1
    assert asker.get_name() not in provider.names


class _LoopWithoutSpare(asyncio.SelectorEventLoop):
    """An asyncio loop that cannot keep a spare task (the attribute is taken)."""

    @property
    def _user_questions_spare_task(self) -> None:
        return None


def test_without_a_spare_task_each_eager_first_step_gets_a_task_of_its_own() -> None:
    # What a loop that cannot keep a spare (and Python 3.14) does: a task per eager start,
    # done at once when the coroutine answers in its first step.
    at_once = _NamingItsTask()
    waiting = _WaitingOnce()

    async def main() -> List[Any]:
        with uq.Context() as context:
            registration = context.user_questions.register_provider(at_once)
            for _ in range(2):
                assert await context.user_questions.ask(request()) == YES
            registration.dispose()
            context.user_questions.register_provider(waiting)
            assert await context.user_questions.ask(request()) == YES
        return [t for t in asyncio.all_tasks() if not t.done()]

    loop = _LoopWithoutSpare()
    try:
        left = loop.run_until_complete(main())
    finally:
        loop.close()
    assert len(left) == 1  # main's own task
    assert len(set(at_once.names)) == 2  # a task each (a spare would have kept its name)
    tasks = waiting.tasks
    assert all(t is not None and t.done() for t in tasks)
    assert len(tasks) == 2 and tasks[0] is tasks[1]
