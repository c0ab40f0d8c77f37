"""The one exception class of the seam (§10). Kept free of the native module so the
native code can import it."""

from __future__ import annotations

__all__ = ["UserQuestionError", "EventLoopThreadError"]


class UserQuestionError(Exception):
    """An ask, a registration or an inbox operation failed.

    ``code`` is the stable name of §10 (``"NO_PROVIDER"``, ...), ``message`` the
    human-readable text. A provider may raise one: a known code passes through to the asker
    unchanged (e.g. ``ASK_CANCELLED`` when the user dismissed the question).
    """

    code: str
    message: str

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message, code)
        self.message = message
        self.code = code

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"UserQuestionError({self.message!r}, {self.code!r})"


class EventLoopThreadError(UserQuestionError, RuntimeError):
    """``ask_blocking`` was called on a thread that runs an event loop (it would deadlock).

    A ``UserQuestionError`` with code ``INVALID_ARGUMENT`` that is also a ``RuntimeError``,
    like ``asyncio.run`` refusing the same situation.
    """

    def __init__(self, message: str, code: str = "INVALID_ARGUMENT") -> None:
        super().__init__(message, code)
