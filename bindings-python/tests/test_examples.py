"""The examples in examples/python run and print what they promise."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "python"


def _run(name: str) -> str:
    return _run_with(name)


def _run_with(name: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-W", "error", str(EXAMPLES / name), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr == ""
    return done.stdout


def test_agent_tool_example() -> None:
    out = _run("agent_tool.py")
    assert (
        '[model] tool result text: {"answers":[{"id":"pkg","selected":["pnpm (Recommended)"]}]}'
        in out
    )
    assert "[model] stale agent: CALLER_NOT_LIVE" in out
    assert "[host] EMPTY_QUESTIONS: ask_user_question requires at least one question" in out


def test_inbox_ui_example() -> None:
    out = _run("inbox_ui.py")
    assert "[ui] #1 rejected: BAD_ANSWER" in out
    assert "[agent] deploy: {'answers': [{'id': 'deploy', 'selected': ['Yes']}]}" in out
    assert (
        "[agent] migrate: UserQuestionError('the user cancelled ask_user_question', 'ASK_CANCELLED')"
        in out
    )


BINDING = Path(__file__).resolve().parents[1]


def _readme() -> str:
    return (BINDING / "README.md").read_text(encoding="utf-8")


def test_the_readme_example_runs() -> None:
    code = _readme().split("```python\n", 1)[1].split("```", 1)[0]
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == "{'answers': [{'id': 'go', 'selected': ['Yes']}]}\n" * 2


def test_the_readme_reads_on_its_own_and_links_the_repository() -> None:
    """It is the package's PyPI page: no links to files that are not on PyPI, and the
    repository's URL (the workspace's, as in pyproject.toml) for the reference."""
    readme = _readme()
    targets = re.findall(r"\]\(([^)]*)\)", readme) + re.findall(r"<([a-z]+:[^>]*)>", readme)
    assert all(t.startswith("https://") for t in targets), targets
    assert "../" not in readme
    cargo = (BINDING.parent / "Cargo.toml").read_text(encoding="utf-8")
    repository = re.search(r'^repository = "([^"]+)"', cargo, re.M)
    assert repository is not None
    assert f"<{repository[1]}>" in readme
    pyproject = (BINDING / "pyproject.toml").read_text(encoding="utf-8")
    assert f'Repository = "{repository[1]}"' in pyproject


def test_fastapi_app_example() -> None:
    out = _run_with("fastapi_app.py", "--check")
    assert "answered: 200 {'ok': True}" in out
    assert "'respondent': {'id': 'alice', 'name': 'Alice Martin'}" in out
