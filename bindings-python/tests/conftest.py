"""Shared fixtures: a fresh context per test, and checks that no test leaves threads, tasks
or unhandled loop errors behind (warnings are errors, see pytest.ini)."""

from __future__ import annotations

import asyncio
import gc
import inspect
import threading
import time
from typing import Any, Dict, Iterator, List

import pytest

import user_questions as uq

QUESTION: Dict[str, Any] = {
    "id": "go",
    "question": "Proceed with the migration?",
    "options": [{"label": "Yes"}, {"label": "No"}],
}
YES: Dict[str, Any] = {"answers": [{"id": "go", "selected": ["Yes"]}]}


def request(**extra: Any) -> Dict[str, Any]:
    """A one-question request, with `agent` / `signal` when given."""
    return {"questions": [dict(QUESTION)], **extra}


@pytest.fixture
def ctx() -> Iterator[uq.Context]:
    with uq.Context() as context:
        yield context


@pytest.fixture(autouse=True)
def _no_leftover_threads() -> Iterator[None]:
    before = set(threading.enumerate())
    yield
    deadline = time.monotonic() + 5
    while True:
        extra = [t for t in threading.enumerate() if t not in before and t.is_alive()]
        if not extra or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    assert not extra, f"threads left behind: {extra}"


@pytest.fixture
async def _no_leftover_tasks() -> Any:
    loop = asyncio.get_running_loop()
    errors: List[Dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: errors.append(context))
    yield
    current = asyncio.current_task()
    deadline = loop.time() + 5
    while True:
        left = [t for t in asyncio.all_tasks() if t is not current and not t.done()]
        if not left or loop.time() > deadline:
            break
        await asyncio.sleep(0.01)
    assert not left, f"tasks left behind: {left}"
    gc.collect()
    await asyncio.sleep(0)
    assert not errors, f"unhandled errors on the event loop: {errors}"


def pytest_collection_modifyitems(items: List[pytest.Item]) -> None:
    for item in items:
        if isinstance(item, pytest.Function) and inspect.iscoroutinefunction(item.obj):
            item.fixturenames.append("_no_leftover_tasks")  # type: ignore[attr-defined]
