"""The terminal provider (§8), driven the way a shell drives it: a child Python process
registers a ``TerminalProvider`` with stdin piped, so it asks through the numbered line
prompts on stderr; the test types answer lines and reads the answer JSON on stdout."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Callable, Iterator, List

import pytest

import user_questions as uq

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
MULTI_SELECT = EXAMPLES / "multi-select.json"
CONFIRM = EXAMPLES / "confirm.json"
# Generous: the child starts an interpreter and loads the extension on a busy machine.
TIMEOUT = 60.0

# The host under test. argv: MODE REQUEST [NEXT_REQUEST]. Prints one line per ask on stdout:
# the compact answer JSON, or `CODE: message`. MODE `async` / `blocking` asks once. MODE
# `abort` / `dispose` / `cancel` asks REQUEST and, on SIGUSR2, aborts its signal / disposes
# the registration / cancels the awaiting task; then asks NEXT_REQUEST through the same
# provider (re-registered after `dispose`).
HOST = r"""
import asyncio, json, signal, sys
from pathlib import Path

import user_questions as uq

def load(path):
    return json.loads(Path(path).read_text())

def emit(line):
    print(line, flush=True)

async def ask(ctx, request):
    try:
        answer = await ctx.user_questions.ask(request)
    except uq.UserQuestionError as e:
        return f"{e.code}: {e.message}"
    except asyncio.CancelledError:
        return "cancelled"
    return json.dumps(answer, separators=(",", ":"))

async def withdraw(mode, ctx, provider, first, then):
    loop = asyncio.get_running_loop()
    registration = ctx.user_questions.register_provider(provider)
    controller = uq.AbortController()
    asking = asyncio.ensure_future(ask(ctx, {**first, "signal": controller.signal}))
    on_signal = {
        "abort": controller.abort,
        "dispose": registration.dispose,
        "cancel": asking.cancel,
    }[mode]
    loop.add_signal_handler(signal.SIGUSR2, on_signal)
    try:
        emit(await asking)
    except asyncio.CancelledError:
        emit("cancelled")
    if mode == "dispose":
        ctx.user_questions.register_provider(provider)
    emit(await ask(ctx, then))

def main():
    mode, path = sys.argv[1], sys.argv[2]
    with uq.Context() as ctx:
        provider = uq.TerminalProvider()
        if provider.interactive:
            sys.exit("stdin is a pipe: the provider should use line prompts")
        if mode == "async":
            ctx.user_questions.register_provider(provider)
            emit(asyncio.run(ask(ctx, load(path))))
        elif mode == "blocking":
            ctx.user_questions.register_provider(provider)
            try:
                emit(json.dumps(ctx.user_questions.ask_blocking(load(path)), separators=(",", ":")))
            except uq.UserQuestionError as e:
                emit(f"{e.code}: {e.message}")
        else:
            asyncio.run(withdraw(mode, ctx, provider, load(path), load(sys.argv[3])))

main()
"""

PKG_PROMPT = (
    "\n"
    "[1/2] Package manager\n"
    "Which package manager should the new project use?\n"
    "  1) pnpm (Recommended) - Fast, strict, disk-efficient.\n"
    "  2) npm - Ships with Node; nothing to install.\n"
    "  3) yarn - Familiar to teams already on it.\n"
    "  o) Other: type your own answer\n"
    "Choose one of 1-3, or o for your own answer; empty to skip, b back, q cancel.\n"
    "> "
)
CHECKS_PROMPT = (
    "\n"
    "[2/2] CI checks\n"
    "Which checks should run on every pull request?\n"
    "  1) Unit tests (Recommended) - Fast feedback on logic.\n"
    "  2) Lint - Style and common mistakes.\n"
    "  3) Type check - Catches type errors before review.\n"
    "  4) End-to-end - Slow, but exercises the real UI.\n"
    "  o) Other: type your own answer\n"
    "Choose any of 1-4 (e.g. 1,2), add o for your own answer; empty to skip, b back, q cancel.\n"
    "> "
)
CONFIRM_PROMPT = (
    "\n"
    "[1/1] Confirm\n"
    "Deploy build 1.4.2 to production now?\n"
    "  | All 214 tests passed; the staging smoke test finished 3 minutes ago.\n"
    "  1) Deploy (Recommended) - Roll out to all regions now.\n"
    "  2) Wait - Hold the release until someone reviews it.\n"
    "  o) Other: type your own answer\n"
    "Choose one of 1-2, or o for your own answer; empty to skip, b back, q cancel.\n"
    "> "
)
ANSWER = (
    '{"answers":[{"id":"pkg","selected":["pnpm (Recommended)"]},'
    '{"id":"checks","selected":["Lint"],"custom":"my text"}]}'
)
WITHDRAWN = "\n-- withdrawn: Package manager (the asker no longer needs an answer)\n"


class Host:
    """A child host process: stdin a pipe the test types into (kept open until the child
    exits, so an answer never comes from end of input), stdout and stderr captured."""

    def __init__(self, directory: Path, *args: str) -> None:
        script = directory / "host.py"
        script.write_text(HOST)
        self._stdout_path = directory / "stdout"
        self._stderr_path = directory / "stderr"
        with open(self._stdout_path, "wb") as out, open(self._stderr_path, "wb") as err:
            self.process = subprocess.Popen(
                [sys.executable, str(script), *args],
                stdin=subprocess.PIPE,
                stdout=out,
                stderr=err,
            )

    @property
    def _stdin(self) -> IO[bytes]:
        assert self.process.stdin is not None
        return self.process.stdin

    def type(self, text: str) -> None:
        self._stdin.write(text.encode())
        self._stdin.flush()

    def stderr(self) -> str:
        return self._stderr_path.read_text()

    def stdout(self) -> str:
        return self._stdout_path.read_text()

    def wait_for_stderr(self, expected: str) -> None:
        """Waits until stderr is exactly `expected` (it only grows)."""
        deadline = time.monotonic() + TIMEOUT
        while self.stderr() != expected:
            if self.process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"stderr never became {expected!r}; it is {self.stderr()!r}")
            time.sleep(0.02)

    def finish(self) -> List[str]:
        """Waits for a clean exit (stdin still open); returns the stdout lines."""
        try:
            code = self.process.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the host did not exit; stderr: {self.stderr()!r}")
        assert code == 0, self.stderr()
        return self.stdout().splitlines()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._stdin.close()


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Callable[..., Host]]:
    started: List[Host] = []

    def start(*args: str) -> Host:
        child = Host(tmp_path, *args)
        started.append(child)
        return child

    yield start
    for child in started:
        child.close()


def test_it_is_exported_and_served_natively() -> None:
    provider = uq.TerminalProvider()
    assert "TerminalProvider" in uq.__all__
    assert isinstance(provider.interactive, bool)
    assert repr(provider) == f"TerminalProvider(interactive={provider.interactive})"
    # It has no Python `ask`: only a natively served provider can be registered like this.
    assert not hasattr(provider, "ask")
    with uq.Context() as ctx:
        registration = ctx.user_questions.register_provider(provider)
        assert ctx.user_questions.has_provider
        with pytest.raises(uq.UserQuestionError) as info:
            ctx.user_questions.register_provider(uq.TerminalProvider())
        assert info.value.code == "DUPLICATE_PROVIDER"
        registration.dispose()
        assert not ctx.user_questions.has_provider


@pytest.mark.parametrize("mode", ["async", "blocking"])
def test_line_prompts_answer_single_and_multi_select_with_custom_text(
    host: Callable[..., Host], mode: str
) -> None:
    child = host(mode, str(MULTI_SELECT))
    child.wait_for_stderr(PKG_PROMPT)
    child.type("1\n")
    child.wait_for_stderr(PKG_PROMPT + CHECKS_PROMPT)
    child.type("2,o\n")
    child.wait_for_stderr(PKG_PROMPT + CHECKS_PROMPT + "Your answer> ")
    child.type("my text\n")
    assert child.finish() == [ANSWER]
    assert child.stderr() == PKG_PROMPT + CHECKS_PROMPT + "Your answer> "
    # The answer is the wire answer of §2, and it fits its questions.
    uq.validate_answer(json.loads(MULTI_SELECT.read_text())["questions"], json.loads(ANSWER))


def test_all_answer_lines_at_once(host: Callable[..., Host]) -> None:
    child = host("async", str(MULTI_SELECT))
    child.type("1\n2,o\nmy text\n")
    assert child.finish() == [ANSWER]
    assert child.stderr() == PKG_PROMPT + CHECKS_PROMPT + "Your answer> "


def test_q_cancels_the_batch(host: Callable[..., Host]) -> None:
    child = host("async", str(MULTI_SELECT))
    child.wait_for_stderr(PKG_PROMPT)
    child.type("q\n")
    assert child.finish() == ["ASK_CANCELLED: the user cancelled ask_user_question"]
    assert child.stderr() == PKG_PROMPT + "\n-- cancelled: Package manager\n"


def test_end_of_input_cancels_the_batch(host: Callable[..., Host]) -> None:
    child = host("async", str(MULTI_SELECT))
    child.wait_for_stderr(PKG_PROMPT)
    child._stdin.close()
    assert child.finish() == ["ASK_CANCELLED: the user cancelled ask_user_question"]
    assert child.stderr() == PKG_PROMPT + "\n-- cancelled: Package manager\n"


@pytest.mark.parametrize(
    "mode, outcome",
    [
        ("abort", "ASK_ABORTED: ask_user_question was aborted before the user answered"),
        (
            "dispose",
            "ASK_ABORTED: the user-questions provider was disposed before the user answered",
        ),
        ("cancel", "cancelled"),
    ],
)
def test_a_withdrawn_ask_leaves_the_prompt(
    host: Callable[..., Host], mode: str, outcome: str
) -> None:
    """The ask is withdrawn while its prompt waits for a line: it settles at once, the prompt
    gives way to a notice, and the next ask (queued behind the withdrawal on the provider's
    one terminal thread) gets the next line."""
    child = host(mode, str(MULTI_SELECT), str(CONFIRM))
    child.wait_for_stderr(PKG_PROMPT)
    child.process.send_signal(signal.SIGUSR2)
    child.wait_for_stderr(PKG_PROMPT + WITHDRAWN + CONFIRM_PROMPT)
    child.type("2\n")
    assert child.finish() == [outcome, '{"answers":[{"id":"deploy","selected":["Wait"]}]}']
    assert child.stderr() == PKG_PROMPT + WITHDRAWN + CONFIRM_PROMPT


def test_the_readme_terminal_example_runs() -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## The terminal provider\n", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", code],
        input="1,o\nmy text\n",
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "answers": [{"id": "db", "selected": ["SQLite"], "custom": "my text"}]
    }
    assert done.stderr == (
        "\n[1/1] Which database?\n  1) SQLite\n  2) PostgreSQL\n"
        "  o) Other: type your own answer\n"
        "Choose any of 1-2 (e.g. 1,2), add o for your own answer; empty to skip, b back, q cancel.\n"
        "> Your answer> "
    )
