"""The private event loop behind the ``*_blocking`` methods: one per thread, kept between
calls while it is idle, closed when its thread ends, at interpreter exit, or as soon as a
call leaves anything on it."""

from __future__ import annotations

import asyncio
import atexit
import contextvars
import os
import threading
from typing import Any, Callable, List, Optional, TypeVar, Union, cast

from . import _native
from ._errors import EventLoopThreadError

__all__ = ["run_blocking"]

_T = TypeVar("_T")

_running_loop = asyncio._get_running_loop
_set_running_loop = asyncio._set_running_loop


class _PrivateLoop:
    """A thread's private event loop, kept between calls while it is idle. Closed when its
    thread ends (the thread-local holding it goes), at interpreter exit (main thread), or as
    soon as a call leaves anything on it (see ``_tidy``)."""

    __slots__ = ("loop", "pid", "idle_keys")

    def __init__(self) -> None:
        self.loop: Optional[asyncio.AbstractEventLoop] = asyncio.new_event_loop()
        self.pid = os.getpid()
        #: How many selector keys the loop had when last found idle (its self-pipe; then
        #: this package's reader too): the same count again needs no scan of the keys.
        self.idle_keys = 1

    def close(self) -> None:
        loop, self.loop = self.loop, None
        if loop is None or loop.is_closed():
            return
        if self.pid != os.getpid():
            # Inherited through fork: its selector is shared with the parent, and closing it
            # would unregister the parent's descriptors. Keep it (unused) instead.
            _FORKED_LOOPS.append(loop)
            return
        loop.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # pragma: no cover - interpreter teardown
            pass


_local = threading.local()
_FORKED_LOOPS: List[asyncio.AbstractEventLoop] = []


def _private_loop() -> asyncio.AbstractEventLoop:
    holder: Optional[_PrivateLoop] = getattr(_local, "holder", None)
    if holder is None or holder.loop is None:
        holder = _local.holder = _PrivateLoop()
    assert holder.loop is not None
    return holder.loop


def _discard_private_loop() -> None:
    """Drops this thread's private loop (closing it, unless inherited through fork)."""
    holder: Optional[_PrivateLoop] = getattr(_local, "holder", None)
    _local.holder = None
    if holder is not None:
        holder.close()


atexit.register(_discard_private_loop)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_discard_private_loop)


def _is_idle(loop: asyncio.AbstractEventLoop, holder: Optional[_PrivateLoop] = None) -> bool:
    """Nothing ready, scheduled, watched (beyond the loop's own self-pipe and this package's
    reader for foreign wakes) or started on ``loop``: it can serve the next call as if
    new. (Private attributes of asyncio's selector loop; a loop without them is never
    reused.) With ``loop``'s holder, as many selector keys as when it was last found idle are
    those same keys (nothing else removes the loop's own), with no scan."""
    selector = getattr(loop, "_selector", None)
    if (
        getattr(loop, "_ready", True)
        or getattr(loop, "_scheduled", True)
        or getattr(loop, "_default_executor", True) is not None
        or getattr(loop, "_asyncgens", True)
        or selector is None
    ):
        return False
    keys = selector.get_map()
    count = len(keys)
    if holder is not None and count == holder.idle_keys:
        return True
    idle = sum(not _ours(key) for key in keys.values()) <= 1
    if idle and holder is not None:
        holder.idle_keys = count
    return idle


def _ours(key: Any) -> bool:
    """Whether a selector key is the native module's reader for wakes from threads Python
    does not know (the core's deadline timer), which a loop keeps from its first waiting ask
    until it closes."""
    reader = key.data[0] if isinstance(key.data, tuple) and key.data else None
    return type(getattr(reader, "_callback", None)).__name__ == "_ForeignDrain"


def _tidy(loop: asyncio.AbstractEventLoop, ran: bool) -> None:
    """After a blocking call: keep this thread's loop when the call left nothing on it, else
    shut it down as ``asyncio.run`` would (cancel its tasks, finish async generators and the
    default executor, close) and start afresh next time."""
    holder: Optional[_PrivateLoop] = getattr(_local, "holder", None)
    mine = holder if holder is not None and holder.loop is loop else None
    closed = loop.is_closed()  # by the provider
    if not closed and _is_idle(loop, mine) and not (ran and asyncio.all_tasks(loop)):
        return
    if mine is not None:
        _local.holder = None
        mine.loop = None
    if not closed:
        _shut_down(loop)


def _shut_down(loop: asyncio.AbstractEventLoop) -> None:
    try:
        _cancel_all_tasks(loop)
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.run_until_complete(loop.shutdown_default_executor())
    finally:
        loop.close()


def _cancel_all_tasks(loop: asyncio.AbstractEventLoop) -> None:
    pending = asyncio.all_tasks(loop)
    if not pending:
        return
    for task in pending:
        task.cancel()
    loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    for task in pending:
        if not task.cancelled() and task.exception() is not None:
            loop.call_exception_handler(
                {
                    "message": "unhandled exception while a blocking ask shut down",
                    "exception": task.exception(),
                    "task": task,
                }
            )


def _wait(loop: asyncio.AbstractEventLoop, pending: _native._PendingAsk) -> Any:
    """Runs ``loop`` until the ask's future is done. Interrupted (``KeyboardInterrupt``,
    ...), the ask is withdrawn: the future is cancelled, the ask withdrawn, and what that
    scheduled runs."""
    future = pending.future
    try:
        return loop.run_until_complete(future)
    finally:
        if not future.done():
            future.cancel()
            pending.withdraw()
            loop.call_soon(loop.stop)
            loop.run_forever()


def run_blocking(
    name: str,
    start: Callable[..., Union[_T, _native._PendingAsk]],
    *args: Any,
) -> _T:
    """Calls ``start(*args)`` (a native asking method: the outcome dict when it settled at
    once, else the pending ask) with this thread's private loop marked running, in a copy
    of the current context (as a task would run it), then runs the loop until the future is
    done. ``name`` is the public method, for the error raised on a thread that runs a loop."""
    if _running_loop() is not None:
        raise EventLoopThreadError(
            f"{name} cannot be called from a thread that runs an event loop; "
            f"await {name.replace('_blocking', '')}() instead"
        )
    loop = _private_loop()
    ran = False
    try:
        _set_running_loop(loop)
        try:
            outcome = contextvars.copy_context().run(start, *args)
        finally:
            _set_running_loop(None)
        if not isinstance(outcome, _native._PendingAsk):  # settled at once
            return outcome
        ran = True
        return cast(_T, _wait(loop, outcome))
    finally:
        _tidy(loop, ran)
