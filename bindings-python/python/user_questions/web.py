"""The question page inside your own web app (docs/reference.md §25).

``asgi_app(inbox, authenticate=who)`` is an ASGI 3 application that serves the page and the
person API of §19 for a :class:`QuestionInbox`, mounted under any path prefix of a Starlette,
FastAPI or other ASGI app, behind the app's own sign-in::

    app.mount("/questions", asgi_app(inbox, authenticate=who))

The API itself is the Rust handler every server of the page uses; this module only carries
requests and responses between it and the ASGI server. Starlette is not required.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import (
    Any,
    AsyncIterator,
    Awaitable,
    Callable,
    Dict,
    List,
    MutableMapping,
    Optional,
    Union,
)
from urllib.parse import quote

from . import _native
from ._context import _settled
from ._errors import UserQuestionError

__all__ = ["ASGIApp", "Person", "asgi_app"]

Person = Dict[str, Any]
"""What ``authenticate`` returns for a signed-in person: ``{"id": str, "name"?: str,
"groups"?: [str]}`` (``name`` defaults to the id)."""

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Authenticate = Callable[[Scope], Union[Optional[Person], Awaitable[Optional[Person]]]]

# A body longer than this is 413; reading stops one byte past it.
_MAX_BODY = 8 * 1024 * 1024
# Characters left as they are when the decoded ASGI path is percent-encoded again.
_PATH_SAFE = "/:@!$&'()*+,;=-._~"


class ASGIApp:
    """The page and person API of one inbox as an ASGI 3 application (see :func:`asgi_app`).

    ``token`` is the one token (``None`` with ``authenticate``); ``close()`` stops serving
    (open event streams end, later requests get 503)."""

    __slots__ = ("_authenticate", "_page")

    def __init__(
        self,
        inbox: _native.QuestionInbox,
        authenticate: Optional[Authenticate],
        token: Optional[str],
    ) -> None:
        self._authenticate = authenticate
        self._page = _native._MountedPage(inbox, token, authenticate is not None)

    @property
    def token(self) -> Optional[str]:
        """The token the page takes (``GET <prefix>/?token=…`` logs in, or ``Authorization:
        Bearer``); ``None`` when ``authenticate`` decides."""
        return self._page.token

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._page.closed

    def close(self) -> None:
        """Stops serving: open event streams end, later requests get 503. Never waits."""
        self._page.close()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            await self._http(scope, receive, send)
        elif kind == "lifespan":
            await _lifespan(receive, send)
        elif kind == "websocket":
            # No websocket route: refused as the handshake's answer.
            await send({"type": "websocket.close", "code": 1000})

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        root = scope.get("root_path", "") or ""
        path: str = scope["path"]
        # Current Starlette keeps the full path and puts the prefix in root_path; older
        # servers strip it.
        if root and path.startswith(root):
            path = path[len(root) :]
        person: Optional[Person] = None
        if self._authenticate is not None:
            found = self._authenticate(scope)
            if inspect.isawaitable(found):
                found = await found
            person = found
        body = await _read_body(receive)
        if body is None:
            return  # the client went away
        query = scope.get("query_string", b"")
        outcome = self._page.handle(
            scope["method"],
            quote(path, safe=_PATH_SAFE),
            query.decode("latin-1") if isinstance(query, bytes) else str(query),
            list(scope.get("headers", [])),
            body,
            root,
            scope.get("scheme", "http"),
            person,
        )
        status, headers, content = await _outcome_of(outcome)
        await send({"type": "http.response.start", "status": status, "headers": headers})
        if isinstance(content, bytes):
            await send({"type": "http.response.body", "body": content})
        else:
            await _stream(content, receive, send)


async def _lifespan(receive: Receive, send: Send) -> None:
    """Answers the lifespan protocol: nothing to start or stop."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def _read_body(receive: Receive) -> Optional[bytes]:
    """The request's body, cut one byte past the limit (the handler answers 413); ``None``
    when the client disconnected."""
    parts: List[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        if chunk:
            parts.append(chunk)
            size += len(chunk)
        if size > _MAX_BODY:
            return b"".join(parts)[: _MAX_BODY + 1]
        if not message.get("more_body", False):
            return b"".join(parts)


async def _until_disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _chunks(stream: _native._PageStream) -> AsyncIterator[bytes]:
    """The event stream as an async iterator of its chunks, each driven on this loop."""
    while True:
        chunk = await _outcome_of(stream.next())
        if chunk is None:
            return
        yield chunk


async def _stream(stream: _native._PageStream, receive: Receive, send: Send) -> None:
    """Sends the event stream chunk by chunk until it ends or the client goes away (then
    the stream is closed, and the server lets it go)."""
    gone = asyncio.ensure_future(_until_disconnect(receive))
    chunks = _chunks(stream)
    ended = False
    try:
        while True:
            chunk_task = asyncio.ensure_future(chunks.__anext__())
            done, _ = await asyncio.wait({chunk_task, gone}, return_when=asyncio.FIRST_COMPLETED)
            if chunk_task not in done:
                chunk_task.cancel()
                return
            try:
                chunk = chunk_task.result()
            except StopAsyncIteration:
                ended = True
                return
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
    except OSError:
        return  # the client went away as we wrote
    finally:
        stream.close()
        gone.cancel()
        if ended:
            await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _outcome_of(outcome: Any) -> Any:
    """A native call's result at once, or a pending one's, awaited."""
    if not isinstance(outcome, _native._PendingAsk):
        return outcome
    return await _settled(outcome)


def asgi_app(
    inbox: _native.QuestionInbox,
    *,
    authenticate: Optional[Authenticate] = None,
    token: Optional[str] = None,
) -> ASGIApp:
    """The page and person API of ``inbox`` (§19) as an ASGI 3 application (§25), for
    ``app.mount("/questions", asgi_app(inbox, authenticate=who))``.

    ``authenticate(scope)`` (sync or async) returns the signed-in person ``{"id", "name"?,
    "groups"?}`` or ``None`` (401); that person is who answered (``respondent``), and sees
    only questions addressed to their id or groups. Without it, ``token`` (default: random,
    see :attr:`ASGIApp.token`) logs in as in §19. ``UserQuestionError`` ``INVALID_ARGUMENT``
    for both together or a token not of 1 to 256 characters from ``A-Z a-z 0-9 - . _ ~``.
    """
    if authenticate is not None and token is not None:
        raise UserQuestionError("give authenticate or token, not both", "INVALID_ARGUMENT")
    return ASGIApp(inbox, authenticate, token)
