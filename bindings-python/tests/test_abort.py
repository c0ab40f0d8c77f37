"""AbortController / AbortSignal from Python."""

from __future__ import annotations

import sys
import threading
from typing import Any, List

import pytest

import user_questions as uq


def test_abort_fires_callbacks_once_and_removed_ones_never() -> None:
    controller = uq.AbortController()
    signal = controller.signal
    assert signal is controller.signal
    calls: List[str] = []
    signal.on_abort(lambda: calls.append("a"))
    remove = signal.on_abort(lambda: calls.append("removed"))
    remove()
    assert not signal.aborted
    thread = threading.Thread(target=controller.abort)
    thread.start()
    thread.join()
    controller.abort()
    assert signal.aborted and calls == ["a"]
    signal.on_abort(lambda: calls.append("late"))  # already aborted: runs at once
    assert calls == ["a", "late"]
    assert repr(signal) == "AbortSignal(aborted=True)"


def test_a_raising_callback_goes_to_unraisablehook(monkeypatch: pytest.MonkeyPatch) -> None:
    reported: List[Any] = []
    monkeypatch.setattr(sys, "unraisablehook", reported.append)
    controller = uq.AbortController()
    calls: List[int] = []
    controller.signal.on_abort(lambda: 1 / 0)
    controller.signal.on_abort(lambda: calls.append(1))
    controller.abort()
    assert calls == [1]
    assert [type(r.exc_value) for r in reported] == [ZeroDivisionError]
