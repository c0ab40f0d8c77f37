"""The examples in examples/python run and print what they promise."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "python"


def _run(name: str) -> str:
    done = subprocess.run(
        [sys.executable, "-W", "error", str(EXAMPLES / name)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr == ""
    return done.stdout


def test_agent_tool_example() -> None:
    out = _run("agent_tool.py")
    assert '[model] tool result text: {"answers":[{"id":"pkg","selected":["pnpm (Recommended)"]}]}' in out
    assert "[model] stale agent: CALLER_NOT_LIVE" in out
    assert "[host] EMPTY_QUESTIONS: ask_user_question requires at least one question" in out


def test_inbox_ui_example() -> None:
    out = _run("inbox_ui.py")
    assert "[ui] #1 rejected: BAD_ANSWER" in out
    assert "[agent] deploy: {'answers': [{'id': 'deploy', 'selected': ['Yes']}]}" in out
    assert "[agent] migrate: UserQuestionError('the user cancelled ask_user_question', 'ASK_CANCELLED')" in out


def test_the_readme_example_runs() -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    code = readme.split("```python\n", 1)[1].split("```", 1)[0]
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == "{'answers': [{'id': 'go', 'selected': ['Yes']}]}\n" * 2
