"""The web provider (§19) from Python: bound and serving once constructed, answered over its
HTTP API (here with urllib, as a browser's page does with fetch), closed by ``close()`` or its
``with`` block, and harmless at interpreter exit."""

from __future__ import annotations

import asyncio
import hashlib
import json
import pathlib
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request
from typing import Any, Dict, Optional, Tuple

import pytest

import user_questions as uq
from conftest import YES, request


def _api(
    web: uq.WebProvider, method: str, path: str, body: Optional[Any] = None
) -> Tuple[int, Any]:
    """One API request with the server's token; (status, parsed JSON body)."""
    return _as(web, web.token, method, path, body)


async def _pending_ticket(web: uq.WebProvider) -> int:
    """The ticket of the first question the API lists, once there is one."""
    deadline = time.monotonic() + 10
    while True:
        status, body = await asyncio.to_thread(_api, web, "GET", "/api/v1/questions")
        assert status == 200
        if body["pending"]:
            return int(body["pending"][0]["ticket"])
        assert time.monotonic() < deadline, "no pending question"
        await asyncio.sleep(0.01)


def test_bound_and_serving_once_constructed() -> None:
    with uq.WebProvider() as web:
        host, port = web.address
        assert host == "127.0.0.1" and port > 0
        assert web.url == f"http://127.0.0.1:{port}/?token={web.token}"
        assert len(web.token) == 43  # 32 random bytes, base64url without padding
        assert _api(web, "GET", "/api/v1/questions") == (200, {"pending": []})
        assert not web.closed
    assert web.closed


def test_a_token_of_ones_own_and_bad_input() -> None:
    with uq.WebProvider(listen="127.0.0.1:0", token="my-token") as web:
        assert web.token == "my-token"
        assert web.url.endswith("/?token=my-token")
    with pytest.raises(uq.UserQuestionError) as bad_token:
        uq.WebProvider(token="has space")
    assert bad_token.value.code == "INVALID_ARGUMENT"
    assert bad_token.value.message == "token must be 1 to 256 characters from A-Z a-z 0-9 - . _ ~"
    with pytest.raises(uq.UserQuestionError) as bad_listen:
        uq.WebProvider(listen="not an address")
    assert bad_listen.value.code == "INVALID_ARGUMENT"
    assert bad_listen.value.message.startswith("cannot listen on not an address: ")


async def test_answered_over_http(ctx: uq.Context) -> None:
    with uq.WebProvider() as web, ctx.user_questions.register_provider(web):
        asking = asyncio.ensure_future(ctx.user_questions.ask(request()))
        ticket = await _pending_ticket(web)
        path = f"/api/v1/questions/{ticket}/answer"
        wrong = {"answers": [{"id": "nope", "selected": []}]}
        status, body = await asyncio.to_thread(_api, web, "POST", path, wrong)
        assert status == 422 and body["error"]["code"] == "BAD_ANSWER"
        assert not asking.done()
        assert await asyncio.to_thread(_api, web, "POST", path, YES) == (200, {"ok": True})
        assert await asyncio.wait_for(asking, 10) == YES
        status, body = await asyncio.to_thread(_api, web, "POST", path, YES)
        assert status == 409 and body["error"]["code"] == "ALREADY_RESOLVED"


async def test_close_withdraws_a_waiting_ask(ctx: uq.Context) -> None:
    web = uq.WebProvider()
    registration = ctx.user_questions.register_provider(web)
    asking = asyncio.ensure_future(ctx.user_questions.ask(request()))
    await _pending_ticket(web)
    web.close()
    with pytest.raises(uq.UserQuestionError) as settled:
        await asyncio.wait_for(asking, 10)
    assert settled.value.code == "ASK_ABORTED"
    assert settled.value.message == (
        "the user-questions provider was disposed before the user answered"
    )
    assert web.closed
    host, port = web.address
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://{host}:{port}/api/v1/questions", timeout=5)
    # Still registered, but closed: a later ask settles the same way at once.
    with pytest.raises(uq.UserQuestionError) as later:
        await ctx.user_questions.ask(request())
    assert later.value.code == "ASK_ABORTED"
    web.close()  # idempotent
    registration.dispose()


async def test_disposing_the_registration_withdraws_but_keeps_serving(ctx: uq.Context) -> None:
    with uq.WebProvider() as web:
        registration = ctx.user_questions.register_provider(web)
        asking = asyncio.ensure_future(ctx.user_questions.ask(request()))
        await _pending_ticket(web)
        registration.dispose()
        with pytest.raises(uq.UserQuestionError) as settled:
            await asyncio.wait_for(asking, 10)
        assert settled.value.code == "ASK_ABORTED"
        assert _api(web, "GET", "/api/v1/questions") == (200, {"pending": []})


def test_interpreter_exit_with_a_server_running_and_an_ask_waiting() -> None:
    script = textwrap.dedent(
        """
        import asyncio
        import user_questions as uq

        web = uq.WebProvider()
        ctx = uq.Context()
        ctx.user_questions.register_provider(web)

        async def main():
            asking = asyncio.ensure_future(ctx.user_questions.ask(
                {"questions": [{"id": "go", "question": "Go?",
                                "options": [{"label": "Yes"}, {"label": "No"}]}]}))
            await asyncio.sleep(0.05)
            print("serving", web.url.startswith("http://127.0.0.1:"), flush=True)
            asking.cancel()

        asyncio.run(main())
        """
    )
    for _ in range(3):
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout == "serving True\n"
        assert done.stderr == ""


def test_repr() -> None:
    web = uq.WebProvider()
    try:
        shown: Dict[str, Any] = {"repr": repr(web)}
        assert shown["repr"].startswith("WebProvider(address='127.0.0.1:")
        assert shown["repr"].endswith("closed=False)")
    finally:
        web.close()


# §23: an access file of people with tokens of their own. alice's token is ALICE, bob's BOB.
ALICE = "alice-token-0123456789"
BOB = "bob-token-0123456789"


def _access_file(tmp_path: pathlib.Path) -> pathlib.Path:
    path = tmp_path / "access.toml"
    path.write_text(
        textwrap.dedent(
            f"""
            [[person]]
            id = "alice"
            name = "Alice Martin"
            token_sha256 = "{hashlib.sha256(ALICE.encode()).hexdigest()}"

            [[person]]
            id = "bob"
            token_sha256 = "{hashlib.sha256(BOB.encode()).hexdigest()}"
            """
        ),
        encoding="utf-8",
    )
    return path


def _as(
    web: uq.WebProvider, token: str, method: str, path: str, body: Optional[Any] = None
) -> Tuple[int, Any]:
    """One API request with a person's token; (status, parsed JSON body)."""
    host, port = web.address
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        f"http://{host}:{port}{path}",
        data=data,
        method=method,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


async def _ticket_for(web: uq.WebProvider, token: str) -> int:
    """The ticket of the first question `token`'s person is shown, once there is one."""
    deadline = time.monotonic() + 10
    while True:
        status, body = await asyncio.to_thread(_as, web, token, "GET", "/api/v1/questions")
        assert status == 200
        if body["pending"]:
            return int(body["pending"][0]["ticket"])
        assert time.monotonic() < deadline, "no pending question"
        await asyncio.sleep(0.01)


def test_access_people_sign_in_with_their_own_tokens(tmp_path: pathlib.Path) -> None:
    # A str and an os.PathLike both do.
    for access in (str(_access_file(tmp_path)), _access_file(tmp_path)):
        with uq.WebProvider(access=access) as web:
            host, port = web.address
            assert web.url == f"http://{host}:{port}/"
            assert _as(web, ALICE, "GET", "/api/v1/me") == (
                200,
                {"id": "alice", "name": "Alice Martin"},
            )
            assert _as(web, BOB, "GET", "/api/v1/me") == (200, {"id": "bob", "name": "bob"})
            # The one token is not accepted: people use their own.
            assert _as(web, web.token, "GET", "/api/v1/me")[0] == 401
            assert _api(web, "GET", "/api/v1/questions")[0] == 401


def test_access_bad_input(tmp_path: pathlib.Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[[person]]\nid = "alice"\ntoken_sha256 = "00"\n', encoding="utf-8")
    with pytest.raises(uq.UserQuestionError) as bad_file:
        uq.WebProvider(access=bad)
    assert bad_file.value.code == "INVALID_ARGUMENT"
    assert bad_file.value.message == (
        f'cannot read the access file {bad}: person "alice": '
        "token_sha256 must be 64 lowercase hex characters"
    )
    missing = tmp_path / "missing.toml"
    with pytest.raises(uq.UserQuestionError) as no_file:
        uq.WebProvider(access=str(missing))
    assert no_file.value.code == "INVALID_ARGUMENT"
    assert no_file.value.message.startswith(f"cannot read the access file {missing}: ")
    with pytest.raises(uq.UserQuestionError) as both:
        uq.WebProvider(token="my-token", access=_access_file(tmp_path))
    assert both.value.code == "INVALID_ARGUMENT"
    assert both.value.message == "give token or access, not both"


async def test_access_a_persons_answer_carries_the_respondent(
    ctx: uq.Context, tmp_path: pathlib.Path
) -> None:
    access = _access_file(tmp_path)
    with uq.WebProvider(access=access) as web, ctx.user_questions.register_provider(web):
        for_bob = asyncio.ensure_future(ctx.user_questions.ask(request(to=["bob"])))
        bobs = await _ticket_for(web, BOB)
        # Not addressed to alice: not listed for her, and not hers to answer.
        assert await asyncio.to_thread(_as, web, ALICE, "GET", "/api/v1/questions") == (
            200,
            {"pending": []},
        )
        status, body = await asyncio.to_thread(
            _as, web, ALICE, "POST", f"/api/v1/questions/{bobs}/answer", YES
        )
        assert status == 404 and body["error"]["code"] == "NOT_PENDING"
        assert not for_bob.done()

        asking = asyncio.ensure_future(ctx.user_questions.ask(request()))
        ticket = await _ticket_for(web, ALICE)
        assert ticket != bobs
        assert await asyncio.to_thread(
            _as, web, ALICE, "POST", f"/api/v1/questions/{ticket}/answer", YES
        ) == (200, {"ok": True})
        assert await asyncio.wait_for(asking, 10) == {
            **YES,
            "respondent": {"id": "alice", "name": "Alice Martin"},
        }
        assert await asyncio.to_thread(
            _as, web, BOB, "POST", f"/api/v1/questions/{bobs}/answer", YES
        ) == (200, {"ok": True})
        answered = await asyncio.wait_for(for_bob, 10)
        assert answered["respondent"] == {"id": "bob", "name": "bob"}
