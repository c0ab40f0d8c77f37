"""Python benchmarks: the package ``user_questions`` beside the pure-Python
reference (benches/reference/reference.py, the original design's ask()), in the same process,
interleaved round by round. Prints ``BENCH <name> <value> <unit>`` lines; scripts/bench makes
the table.

    python benches/python/bench.py [--quick | --check]   (--check: only the self-check)
"""

import asyncio
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))

import reference as ref  # noqa: E402

import user_questions as uq  # noqa: E402

QUICK = "--quick" in sys.argv
ROUNDS = 3 if QUICK else 21
SCALES = [1, 1_000, 100_000]

#: The question every bench asks (the same in every language): one question, two options.
QUESTIONS = [
    {
        "id": "pkg",
        "question": "Which package manager?",
        "options": [{"label": "pnpm (Recommended)", "description": "Fast"}, {"label": "npm"}],
    }
]
ANSWER = {"answers": [{"id": "pkg", "selected": ["npm"]}]}


class FirstOption:
    """A provider written in Python that answers at once with each question's first option."""

    async def ask(self, request):
        return {
            "answers": [
                {"id": q["id"], "selected": [o["label"] for o in (q.get("options") or [])[:1]]}
                for q in request["questions"]
            ]
        }


class SyncFirstOption:
    """The same, as a plain (non-async) method."""

    def ask(self, request):
        return {
            "answers": [
                {"id": q["id"], "selected": [o["label"] for o in (q.get("options") or [])[:1]]}
                for q in request["questions"]
            ]
        }


class RefInbox:
    """A pure-Python inbox for the reference: each ask waits on an asyncio future under its
    ticket until ``answer`` sets it (what the inbox round trip costs in asyncio alone)."""

    def __init__(self):
        self.pending = {}
        self.tickets = 0

    async def ask(self, request):
        self.tickets += 1
        future = asyncio.get_running_loop().create_future()
        self.pending[self.tickets] = future
        return await future

    def answer(self, ticket, answer):
        self.pending.pop(ticket).set_result(answer)


class RefAgent:
    __slots__ = ("id",)

    def __init__(self, agent_id):
        self.id = agent_id


def report(name, value, unit):
    print(f"BENCH {name} {value:.6g} {unit}", flush=True)


async def abatch(op, n):
    t0 = time.perf_counter_ns()
    for _ in range(n):
        await op()
    return (time.perf_counter_ns() - t0) / n


def sbatch(op, n):
    t0 = time.perf_counter_ns()
    for _ in range(n):
        op()
    return (time.perf_counter_ns() - t0) / n


async def compare(ops, target_ms=40):
    """Interleaved rounds (the order rotates each round); each awaited op's median ns per call."""
    names = list(ops)
    sizes = {}
    for name in names:
        await abatch(ops[name], 50)
        n = 8
        while True:
            per = await abatch(ops[name], n)
            if per * n / 1e6 >= target_ms / 4 or n >= 1 << 20:
                sizes[name] = max(8, int(target_ms * 1e6 / max(per, 1)))
                break
            n *= 4
    samples = {name: [] for name in names}
    for r in range(ROUNDS):
        for k in range(len(names)):
            name = names[(r + k) % len(names)]
            samples[name].append(await abatch(ops[name], sizes[name]))
    return {name: statistics.median(samples[name]) for name in names}


async def per_ask():
    py_ctx = uq.Context()
    py_ctx.user_questions.register_provider(FirstOption())
    sync_ctx = uq.Context()
    sync_ctx.user_questions.register_provider(SyncFirstOption())
    auto_ctx = uq.Context()
    auto_ctx.user_questions.register_provider(uq.AutoResponder("recommended"))
    inbox_ctx = uq.Context()
    inbox = uq.QuestionInbox()
    inbox_ctx.user_questions.register_provider(inbox)
    service = ref.ReferenceService(ref.ReferenceAgentRegistry())
    service.register_provider(FirstOption())
    ticket = [0]
    responder = uq.AutoResponder("first")
    ref_inbox = RefInbox()
    inbox_service = ref.ReferenceService(ref.ReferenceAgentRegistry())
    inbox_service.register_provider(ref_inbox)

    async def crossing_floor():
        return responder.answer(QUESTIONS)

    async def inbox_round_trip():
        task = asyncio.ensure_future(inbox_ctx.user_questions.ask({"questions": QUESTIONS}))
        await asyncio.sleep(0)
        ticket[0] += 1
        inbox.answer(ticket[0], ANSWER)
        return await task

    async def inbox_round_trip_deadline():
        # The same with a deadline: the core's timer arms and clears it, and the asker's loop
        # watches for the timer thread while the ask waits.
        task = asyncio.ensure_future(
            inbox_ctx.user_questions.ask({"questions": QUESTIONS, "timeout": 60})
        )
        await asyncio.sleep(0)
        ticket[0] += 1
        inbox.answer(ticket[0], ANSWER)
        return await task

    async def reference_inbox_round_trip():
        # inbox_round_trip with the reference and a pure-Python inbox: the floor asyncio sets.
        task = asyncio.ensure_future(inbox_service.ask({"questions": QUESTIONS}))
        await asyncio.sleep(0)
        ref_inbox.answer(ref_inbox.tickets, ANSWER)
        return await task

    m = await compare(
        {
            "py_provider": lambda: py_ctx.user_questions.ask({"questions": QUESTIONS}),
            "sync_py_provider": lambda: sync_ctx.user_questions.ask({"questions": QUESTIONS}),
            "auto_responder": lambda: auto_ctx.user_questions.ask({"questions": QUESTIONS}),
            "inbox_round_trip": inbox_round_trip,
            "inbox_round_trip_deadline": inbox_round_trip_deadline,
            "reference": lambda: service.ask({"questions": QUESTIONS}),
            "reference_inbox_round_trip": reference_inbox_round_trip,
            # The crossing alone: questions to native and an answer back, no ask.
            "crossing_floor": crossing_floor,
        }
    )
    for name, value in m.items():
        report(f"python.ask.{name}", value, "ns")
    for c in (py_ctx, sync_ctx, auto_ctx, inbox_ctx):
        c.close()


def per_ask_blocking():
    """ask_blocking from a synchronous host (no running loop), beside the reference driven
    the way a synchronous host would: run_until_complete on a loop it keeps."""
    py_ctx = uq.Context()
    py_ctx.user_questions.register_provider(SyncFirstOption())
    auto_ctx = uq.Context()
    auto_ctx.user_questions.register_provider(uq.AutoResponder("recommended"))
    service = ref.ReferenceService(ref.ReferenceAgentRegistry())
    service.register_provider(FirstOption())
    loop = asyncio.new_event_loop()
    try:
        m = compare_sync(
            {
                "blocking_py_provider": lambda: py_ctx.user_questions.ask_blocking(
                    {"questions": QUESTIONS}
                ),
                "blocking_auto_responder": lambda: auto_ctx.user_questions.ask_blocking(
                    {"questions": QUESTIONS}
                ),
                "reference_run_until_complete": lambda: loop.run_until_complete(
                    service.ask({"questions": QUESTIONS})
                ),
            }
        )
    finally:
        loop.close()
    for name, value in m.items():
        report(f"python.ask.{name}", value, "ns")
    py_ctx.close()
    auto_ctx.close()


def compare_sync(ops, target_ms=40):
    """compare() for blocking ops, with no event loop running on this thread."""
    names = list(ops)
    sizes = {}
    for name in names:
        sbatch(ops[name], 50)
        n = 8
        while True:
            per = sbatch(ops[name], n)
            if per * n / 1e6 >= target_ms / 4 or n >= 1 << 20:
                sizes[name] = max(8, int(target_ms * 1e6 / max(per, 1)))
                break
            n *= 4
    samples = {name: [] for name in names}
    for r in range(ROUNDS):
        for k in range(len(names)):
            name = names[(r + k) % len(names)]
            samples[name].append(sbatch(ops[name], sizes[name]))
    return {name: statistics.median(samples[name]) for name in names}


def ours_populated(n):
    ctx = uq.Context()
    last_root = None
    keep = []
    for i in range(1, n):
        agent = uq.Agent(f"agent-{i}")
        owner = last_root if i % 2 == 0 else None
        keep.append(ctx.agents.enter(agent, owner))
        if owner is None:
            last_root = agent
    asker = uq.Agent("asker")
    keep.append(ctx.agents.enter(asker))
    ctx.user_questions.register_provider(FirstOption())
    return ctx, asker, keep


def ref_populated(n):
    agents = ref.ReferenceAgentRegistry()
    last_root = None
    for i in range(1, n):
        agent = RefAgent(f"agent-{i}")
        owner = last_root if i % 2 == 0 else None
        agents.enter(agent, owner)
        if owner is None:
            last_root = agent
    asker = RefAgent("asker")
    agents.enter(asker)
    service = ref.ReferenceService(agents)
    service.register_provider(FirstOption())
    return service, asker


async def identity():
    # Every scale in the same interleaved rounds, so that load from other jobs on a shared
    # machine hits 1 and 100,000 alike.
    ops, keep = {}, []
    for n in SCALES:
        ctx, asker, detaches = ours_populated(n)
        service, ref_asker = ref_populated(n)
        keep.append((ctx, detaches))
        ops[f"ours.{n}"] = lambda ctx=ctx, asker=asker: ctx.user_questions.ask(
            {"questions": QUESTIONS, "agent": asker}
        )
        ops[f"reference.{n}"] = lambda service=service, ref_asker=ref_asker: service.ask(
            {"questions": QUESTIONS, "agent": ref_asker}
        )
    m = await compare(ops, target_ms=25)
    for name, value in m.items():
        report(f"python.identity.{name}", value, "ns")
    for ctx, _ in keep:
        ctx.close()


class RefSignal:
    aborted = True


async def self_check():
    """Before timing: the reference and the package must fail the original design's checks alike
    (same code, same message, in its order) and answer alike, or the comparison is moot."""

    def plan(**extra):
        return [
            {
                "id": "plan",
                "question": "Approve?",
                "options": [{"label": "Yes"}, {"label": "No"}],
                **extra,
            }
        ]

    cases = [
        ("aborted signal", lambda s: {"questions": QUESTIONS, "signal": s["aborted"]}, False),
        ("no questions", lambda s: {"questions": []}, False),
        ("stale agent", lambda s: {"questions": QUESTIONS, "agent": s["stale"]}, False),
        ("child agent", lambda s: {"questions": QUESTIONS, "agent": s["child"]}, False),
        (
            "approve names no option",
            lambda s: {
                "questions": plan(
                    detail="the plan", intent={"kind": "plan-review", "approve": "Ship"}
                )
            },
            False,
        ),
        (
            "intent without detail",
            lambda s: {"questions": plan(intent={"kind": "plan-review", "approve": "Yes"})},
            False,
        ),
        ("no provider", lambda s: {"questions": QUESTIONS}, True),
        ("answered", lambda s: {"questions": QUESTIONS}, False),
    ]
    ctx = uq.Context()
    root, child = uq.Agent("root"), uq.Agent("child")
    keep = [ctx.agents.enter(root), ctx.agents.enter(child, root)]
    agents = ref.ReferenceAgentRegistry()
    ref_root, ref_child = RefAgent("root"), RefAgent("child")
    agents.enter(ref_root)
    agents.enter(ref_child, ref_root)
    service = ref.ReferenceService(agents)
    controller = uq.AbortController()
    controller.abort()
    ours_side = {"aborted": controller.signal, "stale": uq.Agent("root"), "child": child}
    ref_side = {"aborted": RefSignal(), "stale": RefAgent("root"), "child": ref_child}

    async def outcome(awaitable):
        try:
            return repr(await awaitable)
        except (uq.UserQuestionError, ref.ReferenceError) as e:
            return f"{e.code}: {e.message}"

    for name, make, bare in cases:
        registration = undo = None
        if not bare:
            registration = ctx.user_questions.register_provider(FirstOption())
            undo = service.register_provider(FirstOption())
        a = await outcome(ctx.user_questions.ask(make(ours_side)))
        b = await outcome(service.ask(make(ref_side)))
        if registration is not None:
            registration.dispose()
            undo()
        if a != b:
            raise SystemExit(f'self-check "{name}": ours gave {a}, the reference {b}')
    ctx.close()
    del keep


def main():
    asyncio.run(self_check())
    if "--check" in sys.argv:
        return
    asyncio.run(per_ask())
    per_ask_blocking()
    asyncio.run(identity())


if __name__ == "__main__":
    main()
