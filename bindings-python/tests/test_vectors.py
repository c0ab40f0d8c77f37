"""The conformance vectors of §14 (tests/vectors, plus $UQ_VECTORS_DIR), run through the
Python surface. Each ask case whose provider answers or fails runs twice: with a synchronous
and with an asynchronous Python provider."""

from __future__ import annotations

import asyncio
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest

import user_questions as uq

# A `{"fail": {"code": C}}` without a message fails with the spec's own message for C, if any
# (tests/vectors/README.md).
SPEC_MESSAGES = {
    "ASK_ABORTED": "ask_user_question was aborted before the user answered",
    "EMPTY_QUESTIONS": "ask_user_question requires at least one question",
    "CALLER_NOT_LIVE": "human interaction requires the exact live calling agent when an agent is supplied",
    "DELEGATED_CALLER": "human interaction is unavailable while the calling agent is owned by another live agent; "
    "include the unresolved question or decision in the child agent's final result",
    "NO_PROVIDER": "no user-questions provider is registered",
    "DUPLICATE_PROVIDER": "a user-questions provider is already registered",
    "ASK_CANCELLED": "the user cancelled ask_user_question",
}

REPO = Path(__file__).resolve().parents[2]


def _dirs() -> List[Path]:
    dirs = [REPO / "tests" / "vectors"]
    extra = os.environ.get("UQ_VECTORS_DIR")
    if extra:
        dirs.append(Path(extra))
    return dirs


def _cases(sub: str, flavoured: bool = False) -> List[Any]:
    params = []
    for base in _dirs():
        folder = base / sub if sub else base
        for path in sorted(folder.glob("*.json")):
            for i, case in enumerate(json.loads(path.read_text(encoding="utf-8"))):
                label = f"{path.relative_to(base)}[{i}] {case['name']}"
                if not flavoured:
                    params.append(pytest.param(case, id=label))
                    continue
                for flavour in _flavours(case):
                    params.append(pytest.param(case, flavour, id=f"{label} ({flavour})"))
    return params


def _flavours(case: Dict[str, Any]) -> List[str]:
    """Providers that answer or fail run as a sync and as an async provider."""
    provider = case.get("provider") or {}
    return ["sync", "async"] if ("answer" in provider or "fail" in provider) else ["async"]


ASK_CASES = _cases("", flavoured=True)
TOOL_CASES = _cases("tool")
INBOX_CASES = _cases("inbox")
REVIEW_CASES = _cases("review", flavoured=True)

RFC3339_MS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
MAX_TIMEOUT_MS = 2147483647


def test_vectors_are_present() -> None:
    assert ASK_CASES and TOOL_CASES and INBOX_CASES and REVIEW_CASES


def _valid_timeout_ms(ms: Any) -> bool:
    return type(ms) is int and 1 <= ms <= MAX_TIMEOUT_MS


def _python_request(
    request: Any, agent: Optional[uq.Agent], signal: Optional[uq.AbortSignal]
) -> Any:
    """The wire request as Python asks it: a valid ``timeoutMs`` becomes ``timeout`` in
    seconds; a malformed one goes as wire JSON text, where it keeps its meaning and message
    (tests/vectors/README.md). A request that is not an object goes as the JSON text of that
    value: Python reads a ``str`` given to ``ask`` as JSON text, so a string value must be
    quoted to stay one."""
    if not isinstance(request, dict):
        return json.dumps(request)
    if "timeoutMs" in request and not _valid_timeout_ms(request["timeoutMs"]):
        return json.dumps(request)
    req = {k: v for k, v in request.items() if k != "timeoutMs"}
    if "timeoutMs" in request:
        req["timeout"] = request["timeoutMs"] / 1000
    if signal is not None:
        req["signal"] = signal
    if agent is not None:
        req["agent"] = agent
    return req


def _seconds(ms: Optional[int]) -> Optional[float]:
    return None if ms is None else ms / 1000


class Journal:
    """A fresh journal file for a case with ``journal`` (None otherwise)."""

    def __init__(self, case: Dict[str, Any]) -> None:
        self.path: Optional[str] = None
        if "journal" in case:
            fd, self.path = tempfile.mkstemp(suffix=".jsonl")
            os.close(fd)
            os.unlink(self.path)

    def context(self) -> uq.Context:
        return uq.Context(journal=self.path)

    def check(self, case: Dict[str, Any]) -> None:
        if self.path is None:
            return
        with open(self.path, encoding="utf-8") as f:
            lines = f.read().splitlines()
        os.unlink(self.path)
        normalised = []
        for line in lines:
            at = re.search(r'"at":"([^"]*)"', line)
            assert at and RFC3339_MS.match(at[1]), line
            line = line.replace(at[0], '"at":"T"', 1)
            ms = re.search(r'"ms":(\d+)', line)
            if ms:
                line = line.replace(ms[0], '"ms":0', 1)
            normalised.append(line)
        assert normalised == case["journal"]


def _check_provider_request(case: Dict[str, Any], seen: Optional[Dict[str, Any]]) -> None:
    expected = case.get("providerRequest")
    if expected is None:
        return
    assert seen is not None, "the provider was not called"
    assert seen.get("key") == expected.get("key")
    assert seen.get("to") == expected.get("to")
    assert ("expiresAt" in seen) is expected["expiresAt"]
    if expected["expiresAt"]:
        assert RFC3339_MS.match(seen["expiresAt"]), seen["expiresAt"]


class VectorProvider:
    """The runner's provider of README.md: answers, fails, never settles, or (abort
    "during") waits for its own withdrawal signal after telling the runner it was called."""

    def __init__(self, spec: Dict[str, Any], flavour: str, wait_for_withdrawal: bool) -> None:
        self.spec = spec
        self.flavour = flavour
        self.wait_for_withdrawal = wait_for_withdrawal
        self.calls = 0
        self.called = asyncio.Event()
        self.forever = asyncio.Event()  # never set: "never" waits on it
        self.seen: Optional[Dict[str, Any]] = None

    def settle(self, request: Dict[str, Any]) -> Dict[str, Any]:
        if "auto" in self.spec:
            auto = uq.AutoResponder(self.spec["auto"], self.spec.get("approveIntents", False))
            return auto.ask(request)
        if "answer" in self.spec:
            return self.spec["answer"]  # type: ignore[no-any-return]
        fail = self.spec["fail"]
        if "code" in fail:
            message = fail.get(
                "message", SPEC_MESSAGES.get(fail["code"], f"provider failed with {fail['code']}")
            )
            raise uq.UserQuestionError(message, fail["code"])
        raise Exception(fail["message"])

    def ask(self, request: Dict[str, Any]) -> Any:
        self.calls += 1
        self.seen = request
        self.called.set()
        if self.flavour == "sync" and not self.wait_for_withdrawal and "never" not in self.spec:
            return self.settle(request)
        return self._ask_async(request)

    async def _ask_async(self, request: Dict[str, Any]) -> Dict[str, Any]:
        if "never" in self.spec:
            await self.forever.wait()
        if self.wait_for_withdrawal:
            withdrawn = asyncio.Event()
            loop = asyncio.get_running_loop()
            request["signal"].on_abort(lambda: loop.call_soon_threadsafe(withdrawn.set))
            await withdrawn.wait()
        return self.settle(request)


def _setup(
    ctx: uq.Context, case: Dict[str, Any], flavour: str
) -> Tuple[Optional[VectorProvider], Optional[uq.Agent]]:
    entered: Dict[str, uq.Agent] = {}
    detach = {}
    for spec in case.get("agents", []):
        agent = uq.Agent(spec["id"], spec.get("delegationDepth", 0))
        owner = entered[spec["owner"]] if "owner" in spec else None
        detach[spec["id"]] = ctx.agents.enter(agent, owner)
        entered[spec["id"]] = agent
    for agent_id in case.get("exit", []):
        detach[agent_id]()
    caller = case.get("caller")
    agent: Optional[uq.Agent] = None
    if isinstance(caller, dict):
        agent = uq.Agent(caller["stale"])
    elif caller is not None:
        agent = entered[caller]
    ctx.user_questions.strict = bool(case.get("strict", False))
    spec = case.get("provider")
    provider: Optional[VectorProvider] = None
    if spec is not None:
        if "auto" in spec and case.get("abort") != "during" and "providerRequest" not in case:
            ctx.user_questions.register_provider(
                uq.AutoResponder(spec["auto"], spec.get("approveIntents", False))
            )
        else:
            provider = VectorProvider(spec, flavour, case.get("abort") == "during")
            ctx.user_questions.register_provider(provider)
    return provider, agent


def _check_outcome(expect: Dict[str, Any], outcome: Any) -> None:
    if "answer" in expect:
        assert outcome == expect["answer"]
    else:
        assert isinstance(outcome, uq.UserQuestionError), f"expected an error, got {outcome!r}"
        assert outcome.code == expect["error"]["code"]
        if "message" in expect["error"]:
            assert outcome.message == expect["error"]["message"]


@pytest.mark.parametrize(("case", "flavour"), ASK_CASES)
async def test_ask_vector(case: Dict[str, Any], flavour: str) -> None:
    journal = Journal(case)
    with journal.context() as ctx:
        provider, agent = _setup(ctx, case, flavour)
        controller = uq.AbortController()
        if case.get("abort") == "before":
            controller.abort()
        if "requestJson" in case:
            req: Any = case["requestJson"]
        else:
            req = _python_request(case["request"], agent, controller.signal)
        task = asyncio.ensure_future(ctx.user_questions.ask(req))
        if case.get("abort") == "during" and provider is not None:
            called = asyncio.ensure_future(provider.called.wait())
            await asyncio.wait([task, called], return_when=asyncio.FIRST_COMPLETED)
            if provider.called.is_set():
                controller.abort()
            called.cancel()
        try:
            outcome: Any = await asyncio.wait_for(task, 10)
        except uq.UserQuestionError as error:
            outcome = error
        _check_outcome(case["expect"], outcome)
        if "providerCalled" in case and provider is not None:
            assert (provider.calls == 1) is case["providerCalled"]
        if provider is not None and provider.seen is not None:
            asked = (json.loads(case["requestJson"]) if "requestJson" in case else case["request"])[
                "questions"
            ]
            assert [q["id"] for q in provider.seen["questions"]] == [q["id"] for q in asked]
            if agent is not None and isinstance(req, dict):
                assert provider.seen["agent"] is agent
            else:
                assert "agent" not in provider.seen
            assert isinstance(provider.seen["signal"], uq.AbortSignal)
        _check_provider_request(case, provider.seen if provider else None)
    journal.check(case)


@pytest.mark.parametrize("case", TOOL_CASES)
async def test_tool_vector(case: Dict[str, Any]) -> None:
    journal = Journal(case)
    with journal.context() as ctx:
        provider, agent = _setup(ctx, case, "sync")
        tool = uq.AskUserQuestionTool(ctx)
        # A string value is passed as its JSON text: Python reads a ``str`` as JSON text.
        args = (
            case["argsJson"]
            if "argsJson" in case
            else json.dumps(case["args"])
            if isinstance(case["args"], str)
            else case["args"]
        )
        result = await asyncio.wait_for(
            tool.execute(
                args, agent=agent, timeout=_seconds(case.get("timeoutMs")), key=case.get("key")
            ),
            10,
        )
        assert result == case["expect"]
        _check_provider_request(case, provider.seen if provider else None)
    journal.check(case)


@pytest.mark.parametrize(("case", "flavour"), REVIEW_CASES)
async def test_review_vector(case: Dict[str, Any], flavour: str) -> None:
    journal = Journal(case)
    with journal.context() as ctx:
        provider, agent = _setup(ctx, case, flavour)
        controller = uq.AbortController()
        if case.get("abort") == "before":
            controller.abort()
        task = asyncio.ensure_future(
            ctx.user_questions.review_plan(
                case["plan"],
                agent=agent,
                signal=controller.signal,
                timeout=_seconds(case.get("timeoutMs")),
                question=case.get("question"),
            )
        )
        if case.get("abort") == "during" and provider is not None:
            called = asyncio.ensure_future(provider.called.wait())
            await asyncio.wait([task, called], return_when=asyncio.FIRST_COMPLETED)
            if provider.called.is_set():
                controller.abort()
            called.cancel()
        try:
            outcome: Any = await asyncio.wait_for(task, 10)
        except uq.UserQuestionError as error:
            outcome = error
        expect = case["expect"]
        if "review" in expect:
            assert outcome == expect["review"]
        else:
            _check_outcome(expect, outcome)
        if "providerCalled" in case and provider is not None:
            assert (provider.calls == 1) is case["providerCalled"]
        if "providerQuestions" in case:
            assert provider is not None and provider.seen is not None
            assert provider.seen["questions"] == case["providerQuestions"]
    journal.check(case)


@pytest.mark.parametrize("case", INBOX_CASES)
async def test_inbox_vector(case: Dict[str, Any]) -> None:
    ctx = uq.Context()
    _, agent = _setup(ctx, {k: v for k, v in case.items() if k != "provider"}, "sync")
    inbox = uq.QuestionInbox()
    ctx.user_questions.register_provider(inbox)
    events: List[str] = []

    def record(event: uq.InboxEvent) -> None:
        if event["type"] == "resolved" and "by" in event:
            events.append(f"resolved {event['ticket']} {event['outcome']} by {event['by']['id']}")
        elif event["type"] == "resolved":
            events.append(f"resolved {event['ticket']} {event['outcome']}")
        else:
            events.append(f"{event['type']} {event['ticket']}")

    inbox.subscribe(record)
    req = _python_request(case["request"], agent, None)
    task = asyncio.ensure_future(ctx.user_questions.ask(req))
    await asyncio.sleep(0)
    if "pendingKeys" in case:
        (pending,) = inbox.pending()
        assert list(pending) == case["pendingKeys"]
        assert RFC3339_MS.match(pending["askedAt"])
    for step in case["submit"]:
        ticket = step.get("ticket", 1)
        if "settle" in step:
            await asyncio.wait([task], timeout=10)
            assert task.done()
            continue
        before = {p["ticket"]: p for p in inbox.pending()}.get(ticket, {})
        returned: Any = None
        try:
            if "answer" in step:
                inbox.answer(ticket, step["answer"])
            elif "cancel" in step:
                inbox.cancel(ticket)
            elif "extend" in step:
                returned = inbox.extend(ticket, step["extend"] / 1000)
            else:
                inbox.fail(ticket, step["fail"])
            got, message = "OK", None
        except uq.UserQuestionError as error:
            got, message = error.code, error.message
        assert got == step["expect"], step
        if "message" in step:
            assert message == step["message"], step
        if step.get("expiresAt") == "none":
            assert returned is None
        elif step.get("expiresAt") == "later":
            assert isinstance(returned, str) and RFC3339_MS.match(returned)
            assert returned > before["expiresAt"]
            now = {p["ticket"]: p for p in inbox.pending()}[ticket]
            assert now["expiresAt"] == returned
    expect = case["expect"]
    if expect.get("pending"):
        pending = inbox.pending()
        assert [p["ticket"] for p in pending] == [1]
        assert pending[0]["questions"] == case["request"]["questions"]
        if agent is not None:
            assert pending[0]["agentId"] == agent.id
        assert not task.done()
        ctx.close()
        expect = {"error": {"code": "ASK_ABORTED", "message": uq_disposed_message()}}
    try:
        outcome: Any = await asyncio.wait_for(task, 10)
    except uq.UserQuestionError as error:
        outcome = error
    _check_outcome(expect, outcome)
    if "events" in case:
        assert events == case["events"]
    ctx.close()


def uq_disposed_message() -> str:
    return "the user-questions provider was disposed before the user answered"
