"""The remote provider (§20) from Python: bad input, and a hub that cannot be reached, which
settles the ask by its deadline instead of hanging."""

from __future__ import annotations

import asyncio
import socket

import pytest

import user_questions as uq
from conftest import request


def _unused_port() -> int:
    """A loopback port nothing listens on (bound for a moment, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_bad_input() -> None:
    for url, token in [
        ("ftp://127.0.0.1:1", "t"),
        ("127.0.0.1:1", "t"),
        ("http://127.0.0.1:1", ""),
        ("http://127.0.0.1:1", "a b"),
    ]:
        with pytest.raises(uq.UserQuestionError) as bad:
            uq.RemoteProvider(url, token)
        assert bad.value.code == "INVALID_ARGUMENT", (url, token)
    with pytest.raises(uq.UserQuestionError) as no_token:
        uq.RemoteProvider("http://127.0.0.1:1")
    assert no_token.value.message == (
        "token must be a non-empty string of visible ASCII characters"
    )


def test_url_and_a_token_from_the_url() -> None:
    remote = uq.RemoteProvider("http://127.0.0.1:8700/?token=abc")
    assert remote.url == "http://127.0.0.1:8700"
    assert repr(remote) == 'RemoteProvider(url="http://127.0.0.1:8700")'


async def test_an_unreachable_hub_settles_by_the_deadline(ctx: uq.Context) -> None:
    remote = uq.RemoteProvider(f"http://127.0.0.1:{_unused_port()}", "secret")
    with ctx.user_questions.register_provider(remote):
        with pytest.raises(uq.UserQuestionError) as settled:
            await asyncio.wait_for(ctx.user_questions.ask(request(timeout=0.3)), 20)
        assert settled.value.code == "ASK_TIMED_OUT"


async def test_withdrawing_an_ask_on_an_unreachable_hub(ctx: uq.Context) -> None:
    remote = uq.RemoteProvider(f"http://127.0.0.1:{_unused_port()}", "secret")
    registration = ctx.user_questions.register_provider(remote)
    asking = asyncio.ensure_future(ctx.user_questions.ask(request()))
    await asyncio.sleep(0.05)
    registration.dispose()
    with pytest.raises(uq.UserQuestionError) as settled:
        await asyncio.wait_for(asking, 20)
    assert settled.value.code == "ASK_ABORTED"
