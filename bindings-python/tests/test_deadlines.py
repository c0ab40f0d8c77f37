"""Part II from Python: deadlines and keys (§16), the inbox's extend, plan review (§17), the
journal (§18), and the order of §4.7 for every way an ask settles — including the core's
deadline timer, a thread Python does not know, whose work reaches the asker's event loop
through a socket the loop watches."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import threading
import warnings
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import pytest

import user_questions as uq
from conftest import QUESTION, YES, request

RFC3339_MS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
BAD_TIMEOUT = "timeout must be a number of seconds from 0.001 to 2147483.647"
BAD_KEY = "key must be a non-empty string of at most 256 characters"


class Recording:
    """A provider that records its request and what happened to it, and never answers
    (unless told to): its signal listener records ``"signal"`` into ``order``."""

    def __init__(self, order: Optional[List[str]] = None, answer: Any = None) -> None:
        self.requests: List[uq.ProviderRequest] = []
        self.order = order if order is not None else []
        self.answer = answer
        self.waiting: List["asyncio.Future[Any]"] = []  # kept: a collected one would fail

    def ask(self, req: uq.ProviderRequest) -> Any:
        self.requests.append(req)
        req["signal"].on_abort(lambda: self.order.append("signal"))
        if self.answer is not None:
            return self.answer
        never = asyncio.get_running_loop().create_future()  # never set
        self.waiting.append(never)
        return never


async def _code(awaitable: Any) -> str:
    try:
        await awaitable
    except uq.UserQuestionError as error:
        return f"{error.code}: {error.message}"
    return "answered"


# --- timeout and key --------------------------------------------------------------------


@pytest.mark.parametrize(
    "timeout",
    [True, False, 0, 0.0, 0.0004, -1, 2147483.648, "1", None, float("nan"), float("inf"), 10**400],
)
async def test_a_malformed_timeout_is_invalid_request_before_any_check(
    ctx: uq.Context, timeout: Any
) -> None:
    provider = Recording()
    ctx.user_questions.register_provider(provider)
    aborted = uq.AbortController()
    aborted.abort()  # §3 #1 would fail too: the timeout is checked first
    got = await _code(ctx.user_questions.ask(request(timeout=timeout, signal=aborted.signal)))
    assert got == f"INVALID_REQUEST: {BAD_TIMEOUT}"
    assert provider.requests == []


async def test_a_timeout_is_rounded_to_whole_milliseconds(ctx: uq.Context) -> None:
    ctx.user_questions.register_provider(Recording())
    got = await _code(ctx.user_questions.ask(request(timeout=0.0015)))
    assert got == "ASK_TIMED_OUT: the user did not answer ask_user_question within 2 ms"
    assert await _code(ctx.user_questions.ask(request(timeout=0.25))) == (
        "ASK_TIMED_OUT: the user did not answer ask_user_question within 250 ms"
    )


async def test_the_largest_timeout_is_accepted_and_an_answer_wins(ctx: uq.Context) -> None:
    inbox = uq.QuestionInbox()
    ctx.user_questions.register_provider(inbox)
    task = asyncio.ensure_future(ctx.user_questions.ask(request(timeout=2147483.647)))
    await asyncio.sleep(0)
    (pending,) = inbox.pending()
    assert RFC3339_MS.match(pending["expiresAt"])
    inbox.answer(1, YES)
    assert await task == YES


@pytest.mark.parametrize("key", ["", "k" * 257, 7, None, ["a"]])
async def test_a_malformed_key_is_invalid_request(ctx: uq.Context, key: Any) -> None:
    provider = Recording()
    ctx.user_questions.register_provider(provider)
    assert await _code(ctx.user_questions.ask(request(key=key))) == f"INVALID_REQUEST: {BAD_KEY}"
    assert provider.requests == []


async def test_the_provider_s_request_carries_expires_at_and_key(ctx: uq.Context) -> None:
    provider = Recording(answer=YES)
    ctx.user_questions.register_provider(provider)
    assert await ctx.user_questions.ask(request(timeout=60, key="call_1")) == YES
    assert await ctx.user_questions.ask(request()) == YES
    with_both, plain = provider.requests
    assert list(with_both) == ["questions", "signal", "expiresAt", "key"]
    assert RFC3339_MS.match(with_both["expiresAt"]) and with_both["key"] == "call_1"
    assert list(plain) == ["questions", "signal"]


async def test_a_deadline_firing_while_the_loop_is_idle_wakes_the_asker(ctx: uq.Context) -> None:
    """Nothing else is scheduled on the loop: it sleeps in its selector until the timer
    thread's wake arrives through the watched socket."""
    ctx.user_questions.register_provider(Recording())
    loop = asyncio.get_running_loop()
    readers_before = len(loop._selector.get_map())  # type: ignore[attr-defined]
    for ms in (20, 5):
        ask = ctx.user_questions.ask(request(timeout=ms / 1000))
        assert await _code(ask) == (
            f"ASK_TIMED_OUT: the user did not answer ask_user_question within {ms} ms"
        )
    # One watch per loop, kept while it lives: no system call per ask.
    assert len(loop._selector.get_map()) == readers_before + 1  # type: ignore[attr-defined]


def test_a_deadline_with_ask_blocking_and_the_private_loop_is_kept(ctx: uq.Context) -> None:
    """The loop's watch for the timer thread does not count as work left on it: the thread's
    private loop serves the next call."""
    from user_questions import _blocking

    ctx.user_questions.register_provider(uq.QuestionInbox())
    loops = []
    for _ in range(3):
        with pytest.raises(uq.UserQuestionError) as info:
            ctx.user_questions.ask_blocking(request(timeout=0.005))
        assert info.value.code == "ASK_TIMED_OUT"
        loops.append(_blocking._local.holder.loop)
    assert loops[0] is loops[1] is loops[2] and not loops[0].is_closed()


# --- the inbox --------------------------------------------------------------------------


async def test_pending_questions_and_events_carry_asked_at_expires_at_and_key(
    ctx: uq.Context,
) -> None:
    inbox = uq.QuestionInbox()
    ctx.user_questions.register_provider(inbox)
    events: List[uq.InboxEvent] = []
    inbox.subscribe(events.append)
    # Long enough to be still pending after one turn of the loop on a loaded machine.
    task = asyncio.ensure_future(ctx.user_questions.ask(request(timeout=0.2, key="resume-me")))
    await asyncio.sleep(0)
    (pending,) = inbox.pending()
    assert list(pending) == ["ticket", "questions", "askedAt", "expiresAt", "key"]
    assert RFC3339_MS.match(pending["askedAt"]) and pending["askedAt"] <= pending["expiresAt"]
    assert pending["key"] == "resume-me"
    assert await _code(task) == (
        "ASK_TIMED_OUT: the user did not answer ask_user_question within 200 ms"
    )
    assert [e["type"] for e in events] == ["requested", "resolved"]
    assert events[0] == {"type": "requested", **pending}
    assert events[1] == {"type": "resolved", "ticket": 1, "outcome": "timed_out"}
    assert inbox.pending() == []


async def test_extend_gives_more_time_and_tells_subscribers(ctx: uq.Context) -> None:
    inbox = uq.QuestionInbox()
    ctx.user_questions.register_provider(inbox)
    events: List[uq.InboxEvent] = []
    inbox.subscribe(events.append)
    task = asyncio.ensure_future(ctx.user_questions.ask(request(timeout=60)))
    plain = asyncio.ensure_future(ctx.user_questions.ask(request()))
    await asyncio.sleep(0)
    before = inbox.pending()[0]["expiresAt"]
    later = inbox.extend(1, 120)
    assert isinstance(later, str) and RFC3339_MS.match(later) and later > before
    assert inbox.pending()[0]["expiresAt"] == later
    assert inbox.extend(1, 0.001) == later  # never earlier
    assert inbox.extend(2, 5) is None  # no deadline: nothing changes
    assert events[-1] == {"type": "extended", "ticket": 1, "expiresAt": later}
    for bad in [0, 0.0004, -1, True, "5", None, 2147483.648]:
        with pytest.raises(uq.UserQuestionError) as info:
            inbox.extend(1, bad)
        assert (info.value.code, info.value.message) == (
            "INVALID_ARGUMENT",
            "seconds must be a number from 0.001 to 2147483.647",
        )
    with pytest.raises(uq.UserQuestionError) as info:
        inbox.extend(9, 1)
    assert info.value.code == "NOT_PENDING"
    inbox.answer(1, YES)
    inbox.answer(2, YES)
    with pytest.raises(uq.UserQuestionError) as info:
        inbox.extend(1, 1)
    assert info.value.code == "ALREADY_RESOLVED"
    assert await task == YES and await plain == YES


# --- plan review ------------------------------------------------------------------------

PLAN = "1. Add a table.\n2. Backfill."


def _answering(selected: List[str], custom: Optional[str] = None) -> Recording:
    item: Dict[str, Any] = {"id": "plan", "selected": selected}
    if custom is not None:
        item["custom"] = custom
    return Recording(answer={"answers": [item]})


@pytest.mark.parametrize(
    ("provider", "review"),
    [
        (_answering(["Approve"]), {"decision": "approved"}),
        (_answering(["Revise"]), {"decision": "revise"}),
        (_answering([], "split step 2"), {"decision": "revise", "feedback": "split step 2"}),
        (_answering(["Reject"]), {"decision": "rejected"}),
        (_answering([]), {"decision": "dismissed"}),
    ],
)
async def test_review_plan_maps_the_answer_to_a_decision(
    ctx: uq.Context, provider: Recording, review: uq.PlanReview
) -> None:
    ctx.user_questions.register_provider(provider)
    root = uq.Agent("planner")
    ctx.agents.enter(root)
    assert await ctx.user_questions.review_plan(PLAN, agent=root, question="Ship it?") == review
    (asked,) = provider.requests
    assert asked["agent"] is root
    (question,) = asked["questions"]
    assert (question["id"], question["question"], question["detail"]) == (
        "plan",
        "Ship it?",
        PLAN,
    )
    assert question["intent"] == {"kind": "plan-review", "approve": "Approve"}


async def test_review_plan_errors_and_deadline(ctx: uq.Context) -> None:
    assert await _code(ctx.user_questions.review_plan("  ")) == (
        "INVALID_REQUEST: review_plan requires a plan"
    )
    # The empty plan is checked first (§17), before every other argument.
    for bad in ({"timeout": 0}, {"question": 5}, {"agent": "x"}, {"signal": 3}):
        assert await _code(ctx.user_questions.review_plan("", **bad)) == (  # type: ignore[arg-type]
            "INVALID_REQUEST: review_plan requires a plan"
        ), bad
    assert await _code(ctx.user_questions.review_plan(PLAN)) == (
        "NO_PROVIDER: no user-questions provider is registered"
    )
    ctx.user_questions.register_provider(uq.AutoResponder("first"))
    # The auto-responder never approves a plan.
    assert await ctx.user_questions.review_plan(PLAN) == {"decision": "revise"}
    assert await _code(ctx.user_questions.review_plan(PLAN, timeout=0)) == (
        f"INVALID_REQUEST: {BAD_TIMEOUT}"
    )
    with uq.Context() as other:
        other.user_questions.register_provider(Recording())
        assert await _code(other.user_questions.review_plan(PLAN, timeout=0.003)) == (
            "ASK_TIMED_OUT: the user did not answer ask_user_question within 3 ms"
        )


async def test_cancelling_the_task_awaiting_review_plan_withdraws_the_review(
    ctx: uq.Context,
) -> None:
    """As for ``ask()`` (§11): the provider's signal fires before the cancelled task goes on
    (§4.7), and its coroutine is cancelled; so does ``wait_for``'s timeout."""
    order: List[str] = []
    started = asyncio.Event()

    class Waiting:
        async def ask(self, req: uq.ProviderRequest) -> Any:
            req["signal"].on_abort(lambda: order.append("signal"))
            started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                order.append("provider cancelled")
                raise

    ctx.user_questions.register_provider(Waiting())
    task = asyncio.ensure_future(ctx.user_questions.review_plan(PLAN))
    await started.wait()
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        order.append("asker cancelled")
    assert order[0] == "signal" and "asker cancelled" in order
    while "provider cancelled" not in order:
        await asyncio.sleep(0.001)

    order.clear()
    started.clear()
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(ctx.user_questions.review_plan(PLAN), 0.01)
    assert order[0] == "signal"


def test_review_plan_blocking(ctx: uq.Context) -> None:
    ctx.user_questions.register_provider(_answering(["Approve"]))
    assert ctx.user_questions.review_plan_blocking(PLAN) == {"decision": "approved"}

    async def on_a_loop() -> None:
        with pytest.raises(uq.EventLoopThreadError, match=r"await review_plan\(\) instead"):
            ctx.user_questions.review_plan_blocking(PLAN)

    asyncio.run(on_a_loop())


# --- the tool ---------------------------------------------------------------------------


async def test_the_tool_takes_timeout_and_key_from_its_caller(ctx: uq.Context) -> None:
    provider = Recording()
    ctx.user_questions.register_provider(provider)
    tool = uq.AskUserQuestionTool(ctx)
    args = {"questions": [QUESTION], "timeoutMs": 1, "key": "from the model"}
    result = await tool.execute(args, timeout=0.004, key="toolu_01")
    assert result == {
        "isError": True,
        "error": {
            "name": "UserQuestionError",
            "code": "ASK_TIMED_OUT",
            "message": "the user did not answer ask_user_question within 4 ms",
        },
        "content": [
            {"type": "text", "text": "Error: the user did not answer ask_user_question within 4 ms"}
        ],
    }
    assert provider.requests[0]["key"] == "toolu_01"
    bad = await tool.execute(args, timeout=True)
    assert bad["isError"] and bad["error"]["message"] == BAD_TIMEOUT
    bad = await tool.execute(args, key="")
    assert bad["isError"] and bad["error"]["message"] == BAD_KEY


# --- the journal ------------------------------------------------------------------------


async def test_a_journal_records_every_ask(tmp_path: Path) -> None:
    path = tmp_path / "asks.jsonl"
    with uq.Context(journal=path) as ctx:
        ctx.user_questions.register_provider(Recording(answer=YES))
        assert await ctx.user_questions.ask(request(key="k", timeout=60)) == YES
        assert await _code(ctx.user_questions.ask({"questions": []})) == (
            "EMPTY_QUESTIONS: ask_user_question requires at least one question"
        )
        assert await _code(ctx.user_questions.ask({"questions": "nope"})) != "answered"
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [(line["event"], line["ask"]) for line in lines] == [
        ("asked", 1),
        ("settled", 1),
        ("refused", 2),
        ("refused", 3),
    ]
    assert lines[0]["key"] == "k" and lines[0]["timeoutMs"] == 60000
    assert lines[1]["outcome"] == "answered" and lines[1]["answer"] == YES


@pytest.mark.parametrize("target", ["/dev/full", "a directory"])
async def test_a_journal_that_cannot_be_written_warns_once_and_never_fails_an_ask(
    tmp_path: Path, target: str
) -> None:
    """``/dev/full`` opens but every write fails (ENOSPC); a directory cannot be opened. (A
    read-only file would do the same, except for root, who may write it anyway.)"""
    path = Path(target) if target.startswith("/") else tmp_path
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with uq.Context(journal=path) as ctx:
            ctx.user_questions.register_provider(Recording(answer=YES))
            for _ in range(3):
                assert await ctx.user_questions.ask(request()) == YES
            assert await _code(ctx.user_questions.ask({"questions": []})) != "answered"
            tool = uq.AskUserQuestionTool(ctx)
            assert not (await tool.execute({"questions": [QUESTION]}))["isError"]
    assert [w.category for w in caught] == [RuntimeWarning]
    assert "cannot be written" in str(caught[0].message)


# --- §4.7: listeners and subscribers run before the asker observes the settlement ---------

# Each cause gets the scene: the context, the caller's controller, the inbox, the asker's task
# and the provider's registration.
Withdraw = Callable[[Dict[str, Any]], None]


def _answer_from_a_thread(scene: Dict[str, Any]) -> None:
    worker = threading.Thread(target=scene["inbox"].answer, args=(1, YES))
    worker.start()
    worker.join()


CAUSES: Dict[str, Withdraw] = {
    "abort": lambda scene: scene["controller"].abort(),
    "task cancellation": lambda scene: scene["task"].cancel(),
    "provider disposal": lambda scene: scene["registration"].dispose(),
    "context disposal": lambda scene: scene["ctx"].close(),
    "deadline": lambda scene: None,  # the request's timeout, on the core's timer thread
    "answer from another thread": _answer_from_a_thread,
}


async def test_many_deadlines_on_one_loop_keep_every_ticket_s_events_in_order() -> None:
    # Deadlines fire on the core's timer thread (their events reach Python through the loop)
    # while new asks start on the loop's own thread (their events are delivered there at
    # once): each ticket's `requested` still comes before its `resolved`, and both before its
    # asker observes the time-out (§4.7).
    ctx = uq.Context()
    inbox = uq.QuestionInbox()
    ctx.user_questions.register_provider(inbox)
    seen: Dict[str, List[str]] = {}
    key_of: Dict[int, str] = {}

    def subscriber(event: Any) -> None:
        if event["type"] == "requested":
            key_of[event["ticket"]] = event["key"]
        seen.setdefault(key_of.get(event["ticket"], f"unknown {event['ticket']}"), []).append(
            event["type"]
        )

    inbox.subscribe(subscriber)

    async def one(i: int) -> None:
        timeout = (0.001, 0.002, 0.005)[i % 3]
        with pytest.raises(uq.UserQuestionError) as raised:
            await ctx.user_questions.ask(request(key=f"k{i}", timeout=timeout))
        assert raised.value.code == "ASK_TIMED_OUT"
        seen.setdefault(f"k{i}", []).append("observed")

    # An ask whose deadline passes while it starts (a loaded machine) settles as it starts:
    # its `resolved`, caused on the timer thread, still comes first. Ten rounds: that case
    # is rare enough to need them.
    for _ in range(10):
        seen.clear()
        await asyncio.gather(*[one(i) for i in range(1000)])
        orders: Dict[str, int] = {}
        for events in seen.values():
            orders[",".join(events)] = orders.get(",".join(events), 0) + 1
        assert orders == {"requested,resolved,observed": 1000}
    ctx.close()


@pytest.mark.parametrize("kind", ["provider signal", "inbox subscriber"])
@pytest.mark.parametrize("cause", list(CAUSES))
async def test_the_ui_hears_of_a_settlement_before_the_asker_observes_it(
    kind: str, cause: str
) -> None:
    if cause == "answer from another thread":
        kind = "inbox subscriber"  # an answer fires no signal: the subscriber is the UI
    order: List[str] = []
    ctx = uq.Context()
    inbox = uq.QuestionInbox()
    if kind == "provider signal":
        provider: Any = Recording(order)
    else:
        provider = inbox
        inbox.subscribe(
            lambda e: order.append(f"resolved {e['outcome']}") if e["type"] == "resolved" else None
        )
    registration = ctx.user_questions.register_provider(provider)
    controller = uq.AbortController()
    timeout = 0.01 if cause == "deadline" else None
    req = request(signal=controller.signal)
    if timeout is not None:
        req["timeout"] = timeout

    async def asker() -> None:
        try:
            await ctx.user_questions.ask(req)
            order.append("asker: answered")
        except uq.UserQuestionError as error:
            order.append(f"asker: {error.code}")
        except asyncio.CancelledError:
            order.append("asker: cancelled")

    task = asyncio.ensure_future(asker())
    while not (inbox.pending() if provider is inbox else provider.requests):
        await asyncio.sleep(0)
    CAUSES[cause](
        {
            "ctx": ctx,
            "controller": controller,
            "inbox": inbox,
            "task": task,
            "registration": registration,
        }
    )
    await asyncio.wait([task], timeout=10)
    ctx.close()
    ui = "signal" if kind == "provider signal" else None
    expected_asker = {
        "abort": "asker: ASK_ABORTED",
        "task cancellation": "asker: cancelled",
        "provider disposal": "asker: ASK_ABORTED",
        "context disposal": "asker: ASK_ABORTED",
        "deadline": "asker: ASK_TIMED_OUT",
        "answer from another thread": "asker: answered",
    }[cause]
    if ui is None:
        outcome = {
            "asker: ASK_ABORTED": "aborted",
            "asker: cancelled": "aborted",
            "asker: ASK_TIMED_OUT": "timed_out",
            "asker: answered": "answered",
        }[expected_asker]
        ui = f"resolved {outcome}"
    assert order == [ui, expected_asker]


# --- interpreter exit -------------------------------------------------------------------

EXIT_SCRIPT = r"""
import asyncio, sys, threading, time
import user_questions as uq

mode, seconds = sys.argv[1], float(sys.argv[2])
Q = {"questions": [{"id": "go", "question": "Proceed?"}], "timeout": seconds}
ctx = uq.Context()
inbox = uq.QuestionInbox()
ctx.user_questions.register_provider(inbox)
inbox.subscribe(lambda event: None)

class Listening:
    futures = []

    def ask(self, request):
        request["signal"].on_abort(lambda: None)
        future = asyncio.get_running_loop().create_future()
        self.futures.append(future)  # kept: the ask waits (a future nobody keeps fails it)
        return future

other = uq.Context()
other.user_questions.register_provider(Listening())

if mode == "loop left open":
    loop = asyncio.new_event_loop()
    loop.create_task(ctx.user_questions.ask(Q))
    loop.create_task(other.user_questions.ask(Q))
    loop.run_until_complete(asyncio.sleep(0.001))
elif mode == "blocking in a daemon thread":
    threads = [
        threading.Thread(target=c.user_questions.ask_blocking, args=(Q,), daemon=True)
        for c in (ctx, other)
    ]
    for t in threads:
        t.start()
    # Exit once each thread is done, or waits in its loop's selector with its deadline far
    # off; never while it may be inside the extension, starting its ask or settling it as
    # the deadline passes: CPython < 3.14 ends a daemon thread that wants the GIL back after
    # exit began by unwinding its stack (pthread_exit), which no extension survives when the
    # thread is inside one of its calls (README: "Daemon threads").
    far_off = seconds >= 60
    def waiting(t):
        frame = sys._current_frames().get(t.ident)
        selecting = frame is not None and frame.f_code.co_name == "select"
        return not t.is_alive() or (far_off and selecting)
    for _ in range(10000):
        if all(waiting(t) for t in threads):
            break
        time.sleep(0.001)
    assert all(waiting(t) for t in threads), "a thread is still settling its ask"
if len(sys.argv) > 3:
    time.sleep(float(sys.argv[3]))  # the deadline passes with the loop not running
print("exiting", flush=True)
"""


@pytest.mark.parametrize("mode", ["loop left open", "blocking in a daemon thread"])
# Deadlines: passing at about exit, passing soon after, passing while the main thread sleeps
# (the loop left open is not running then), and far off (a hang at exit until it passes
# would meet the subprocess's timeout).
@pytest.mark.parametrize("timing", [("0.001",), ("0.02",), ("0.005", "0.05"), ("600",)])
def test_interpreter_exit_with_a_pending_ask_with_a_deadline_is_clean(
    mode: str, timing: Any
) -> None:
    for _ in range(3):
        done = subprocess.run(
            [sys.executable, "-W", "error", "-c", EXIT_SCRIPT, mode, *timing],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert (done.returncode, done.stdout) == (0, "exiting\n"), done.stderr
        assert "Fatal" not in done.stderr and "panicked" not in done.stderr, done.stderr
