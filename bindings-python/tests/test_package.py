"""The package's shape: exports, codes, the exception class, the stub, the abi3 build."""

from __future__ import annotations

import inspect
import pickle
import subprocess
import sys
from pathlib import Path

import user_questions as uq
from user_questions import _native

PACKAGE = Path(uq.__file__).resolve().parent
ALLOWLIST = Path(__file__).resolve().parents[1] / "stubtest-allowlist.txt"
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
    assert list(uq.CODES.values()) == list(range(17))


def test_user_question_error_carries_code_and_message() -> None:
    error = uq.UserQuestionError("no user-questions provider is registered", "NO_PROVIDER")
    assert isinstance(error, Exception)
    assert error.code == "NO_PROVIDER"
    assert error.message == "no user-questions provider is registered"
    assert str(error) == error.message
    again = pickle.loads(pickle.dumps(error))
    assert (type(again), again.code, again.message) == (uq.UserQuestionError, error.code, error.message)


def test_the_native_module_is_private_and_abi3() -> None:
    assert _native.__name__ == "user_questions._native"
    assert Path(_native.__file__).name.endswith(".abi3.so")
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
