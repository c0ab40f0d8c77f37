"""The package's shape: exports, codes, the exception class, the stub, the build for this
Python."""

from __future__ import annotations

import asyncio
import importlib.machinery
import inspect
import pickle
import subprocess
import sys
import typing
from pathlib import Path
from typing import Any, Mapping

import user_questions as uq
from user_questions import _native

PACKAGE = Path(uq.__file__).resolve().parent
BINDING = Path(__file__).resolve().parents[1]
ALLOWLIST = BINDING / "stubtest-allowlist.txt"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "python"

# §10, copied by hand: CODES must equal it exactly.
SPEC_CODES = {
    "OK": 0,
    "ASK_ABORTED": 1,
    "EMPTY_QUESTIONS": 2,
    "CALLER_NOT_LIVE": 3,
    "DELEGATED_CALLER": 4,
    "BAD_INTENT": 5,
    "NO_PROVIDER": 6,
    "DUPLICATE_PROVIDER": 7,
    "ASK_CANCELLED": 8,
    "INVALID_REQUEST": 9,
    "BAD_ANSWER": 10,
    "PROVIDER_FAILED": 11,
    "NOT_PENDING": 12,
    "ALREADY_RESOLVED": 13,
    "AGENT_EXISTS": 14,
    "INVALID_ARGUMENT": 15,
    "INTERNAL": 16,
    "ASK_TIMED_OUT": 17,
}


def test_the_issue_s_exports_are_there() -> None:
    for name in [
        "Context",
        "Agent",
        "AbortController",
        "AbortSignal",
        "UserQuestionError",
        "QuestionInbox",
        "AutoResponder",
        "TerminalProvider",
        "AskUserQuestionTool",
        "validate_answer",
        "CODES",
    ]:
        assert name in uq.__all__
        assert getattr(uq, name) is not None
    assert set(uq.__all__) <= set(dir(uq))


def test_codes_equal_spec_section_10() -> None:
    assert uq.CODES == SPEC_CODES
    assert list(uq.CODES.values()) == list(range(18))


def test_user_question_error_carries_code_and_message() -> None:
    error = uq.UserQuestionError("no user-questions provider is registered", "NO_PROVIDER")
    assert isinstance(error, Exception)
    assert error.code == "NO_PROVIDER"
    assert error.message == "no user-questions provider is registered"
    assert str(error) == error.message
    again = pickle.loads(pickle.dumps(error))
    assert (type(again), again.code, again.message) == (
        uq.UserQuestionError,
        error.code,
        error.message,
    )


def test_the_native_module_is_private_and_built_for_this_python() -> None:
    # Built for each Python version, not abi3 (the limited API's function calls cost ~13 %).
    assert _native.__name__ == "user_questions._native"
    assert Path(_native.__file__).name == "_native" + importlib.machinery.EXTENSION_SUFFIXES[0]
    assert (PACKAGE / "py.typed").is_file()
    assert (PACKAGE / "_native.pyi").is_file()


def test_ask_and_execute_are_coroutine_functions() -> None:
    assert inspect.iscoroutinefunction(uq.UserQuestionService.ask)
    assert inspect.iscoroutinefunction(uq.AskUserQuestionTool.execute)


def test_stub_matches_the_built_module_and_the_package_type_checks(tmp_path: Path) -> None:
    """mypy.stubtest: the hand-written _native.pyi against the built module; mypy --strict
    over the package (the facade is typed inline) and the examples that use it."""
    stubtest = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy.stubtest",
            "user_questions",
            "--allowlist",
            str(ALLOWLIST),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert stubtest.returncode == 0, stubtest.stdout + stubtest.stderr
    for target in (["-p", "user_questions"], [str(EXAMPLES)]):
        mypy = subprocess.run(
            [sys.executable, "-m", "mypy", "--strict", "--no-incremental", *target],
            capture_output=True,
            text=True,
            cwd=tmp_path,
        )
        assert mypy.returncode == 0, mypy.stdout + mypy.stderr


def test_the_code_name_literal_is_the_core_s_code_table() -> None:
    # CODES is built by the native module from the core's own table, in number order.
    assert list(typing.get_args(uq.CodeName)) == list(uq.CODES)
    assert list(uq.CODES.values()) == list(range(len(uq.CODES)))


def _fits(value: Mapping[str, Any], shape: Any) -> None:
    """``value``'s keys are ``shape``'s: every required key, and only known ones."""
    keys = set(value)
    assert shape.__required_keys__ <= keys, (shape.__name__, keys)
    assert keys <= shape.__required_keys__ | shape.__optional_keys__, (shape.__name__, keys)


def test_the_typed_dicts_have_the_wire_keys_the_core_produces() -> None:
    full: uq.Item = {
        "id": "go",
        "question": "Proceed?",
        "detail": "plan",
        "header": "Go",
        "options": [{"label": "Yes", "description": "d"}, {"label": "No"}],
        "multiSelect": False,
        "intent": {"kind": "plan-review", "approve": "Yes"},
    }
    assert uq.Item.__required_keys__ == {"id", "question"}
    # `input` (§24) never comes with options: its own question below.
    assert uq.Item.__optional_keys__ == set(full) - {"id", "question"} | {"input"}
    assert uq.Option.__required_keys__ == {"label"}
    assert uq.Option.__optional_keys__ == {"description", "preview"}
    assert uq.Intent.__required_keys__ == {"kind", "approve"}
    assert uq.AnswerItem.__optional_keys__ == {"custom", "value"}
    typed: uq.Item = {
        "id": "port",
        "question": "Port?",
        "input": {"kind": "integer", "minimum": 1, "maximum": 65535, "default": 8080},
    }
    assert uq.Input.__required_keys__ == {"kind"}
    assert set(typed["input"]) <= uq.Input.__required_keys__ | uq.Input.__optional_keys__
    assert set(typing.get_args(uq.InputKind)) == {
        "text",
        "number",
        "integer",
        "boolean",
        "date",
        "datetime",
        "email",
        "url",
        "secret",
        "file",
    }
    assert uq.FileValue.__required_keys__ == {"name", "mediaType", "size", "sha256", "data"}

    with uq.Context() as ctx:
        inbox = uq.QuestionInbox()
        ctx.user_questions.register_provider(inbox)
        agent = uq.Agent("planner")
        ctx.agents.enter(agent)
        events: typing.List[uq.InboxEvent] = []
        inbox.subscribe(events.append)
        seen: typing.List[uq.ProviderRequest] = []

        async def main() -> uq.Answer:
            task = asyncio.ensure_future(
                ctx.user_questions.ask({"questions": [full], "agent": agent})
            )
            while not inbox.pending():
                await asyncio.sleep(0)
            (pending,) = inbox.pending()
            _fits(pending, uq.PendingQuestion)
            assert list(pending) == ["ticket", "questions", "agentId", "askedAt"]
            inbox.answer(
                pending["ticket"], {"answers": [{"id": "go", "selected": [], "custom": "x"}]}
            )
            return await task

        answer = asyncio.run(main())
        _fits(answer, uq.Answer)
        _fits(answer["answers"][0], uq.AnswerItem)
        _fits(events[0], uq.RequestedEvent)
        _fits(events[1], uq.ResolvedEvent)
        assert events[1]["type"] == "resolved"
        assert events[1]["outcome"] in typing.get_args(uq.Outcome)

    class Recording:
        def ask(self, request: uq.ProviderRequest) -> uq.Answer:
            seen.append(request)
            return {"answers": [{"id": "go", "selected": ["Yes"]}]}

    with uq.Context() as ctx:
        ctx.user_questions.register_provider(Recording())
        ctx.agents.enter(agent)
        ctx.user_questions.ask_blocking({"questions": [full], "agent": agent})
        tool = uq.AskUserQuestionTool(ctx)
        _fits(tool.definition, uq.ToolDefinition)
        ok = asyncio.run(tool.execute({"questions": [full]}))
        failed = asyncio.run(tool.execute({"questions": []}))
    _fits(seen[0], uq.ProviderRequest)
    assert set(seen[0]) == {"questions", "agent", "signal"}
    _fits(ok, uq.ToolSuccess)
    _fits(failed, uq.ToolFailure)
    assert failed["isError"] and failed["error"]["code"] in typing.get_args(uq.CodeName)
    _fits(failed["error"], uq.ToolError)
    _fits(ok["content"][0], uq.TextContent)


def test_every_pinned_tool_is_in_the_lock() -> None:
    """requirements-dev.lock (what scripts/test-python installs) pins every tool of
    requirements-dev.txt at the same version."""

    def pins(name: str) -> typing.Dict[str, str]:
        lines = (BINDING / name).read_text(encoding="utf-8").splitlines()
        found = {}
        for line in lines:
            line = line.split("#", 1)[0].strip()
            if line:
                package, version = line.split("==")
                found[package.lower().replace("_", "-")] = version
        return found

    wanted, locked = pins("requirements-dev.txt"), pins("requirements-dev.lock")
    assert wanted and all(locked.get(p) == v for p, v in wanted.items()), (wanted, locked)
