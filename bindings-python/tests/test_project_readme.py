"""The project README's Python snippet runs as written and prints what its comments say."""

import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_project_readme_python_snippet_runs_as_written() -> None:
    code = README.read_text(encoding="utf-8").split("```python\n", 1)[1].split("```", 1)[0]
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == [
        "{'answers': [{'id': 'go', 'selected': ['Yes (Recommended)']}]}",
        "EMPTY_QUESTIONS 2",
    ]
