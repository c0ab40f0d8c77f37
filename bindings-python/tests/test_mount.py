"""The page inside the host's own web app (§25): ``user_questions.web.asgi_app`` mounted in a
FastAPI app under uvicorn behind the app's own sign-in, answered over HTTP and in Chromium;
the ASGI protocol driven by hand; and interpreter exit with an event stream open."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap
from typing import Any, AsyncIterator, Dict, List, Optional, Tuple

import httpx
import pytest
import uvicorn
from fastapi import FastAPI, Request

import user_questions as uq
from user_questions.web import asgi_app

ROOT = pathlib.Path(__file__).resolve().parents[2]
BROWSER_SCRIPT = ROOT / "person" / "tests" / "page" / "answer_mounted.js"
PEOPLE: Dict[str, Dict[str, Any]] = {
    "alice": {"id": "alice", "name": "Alice Martin", "groups": ["ops"]},
    "bob": {"id": "bob"},
}


def _question(qid: str, to: List[str]) -> Dict[str, Any]:
    return {
        "questions": [
            {"id": qid, "question": f"Deploy {qid}?", "options": [{"label": "A"}, {"label": "B"}]}
        ],
        "to": to,
    }


def _who(request: Request) -> Optional[Dict[str, Any]]:
    """The host's own sign-in: a cookie naming a known user; anyone else is refused."""
    return PEOPLE.get(request.cookies.get("user", ""))


def _host_app(inbox: uq.QuestionInbox) -> FastAPI:
    app = FastAPI()

    @app.get("/health")
    async def health() -> Dict[str, bool]:
        return {"ok": True}

    async def who(scope: Any) -> Optional[Dict[str, Any]]:  # async, as a session lookup is
        return _who(Request(scope))

    app.mount("/questions", asgi_app(inbox, authenticate=who))
    return app


async def _serve(app: Any) -> Tuple[uvicorn.Server, "asyncio.Task[None]", str]:
    config = uvicorn.Config(
        app, host="127.0.0.1", port=0, log_level="warning", timeout_graceful_shutdown=1
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    return server, task, f"http://127.0.0.1:{port}"


@contextlib.asynccontextmanager
async def _hosted(ctx: uq.Context) -> AsyncIterator[Tuple[uq.QuestionInbox, str]]:
    inbox = uq.QuestionInbox()
    registration = ctx.user_questions.register_provider(inbox)
    server, task, base = await _serve(_host_app(inbox))
    try:
        yield inbox, base
    finally:
        server.should_exit = True
        await task
        registration.dispose()


async def _pending(inbox: uq.QuestionInbox, n: int) -> Dict[str, int]:
    for _ in range(2000):
        if len(inbox.pending()) >= n:
            break
        await asyncio.sleep(0.005)
    return {p["questions"][0]["id"]: p["ticket"] for p in inbox.pending()}


async def test_fastapi_with_the_hosts_sign_in(ctx: uq.Context) -> None:
    async with _hosted(ctx) as hosted:
        inbox, base = hosted
        for_ops = asyncio.ensure_future(ctx.user_questions.ask(_question("ops", ["ops"])))
        for_bob = asyncio.ensure_future(ctx.user_questions.ask(_question("bob", ["bob"])))
        tickets = await _pending(inbox, 2)
        alice = {"cookie": "user=alice"}
        async with httpx.AsyncClient(base_url=base) as client:
            # The host's own routes are its own.
            health = await client.get("/health")
            assert health.json() == {"ok": True}
            assert "content-security-policy" not in health.headers
            # Signed out, or refused by the host's sign-in: 401 in the API's shape.
            for cookies in ({}, {"cookie": "user=mallory"}):
                r = await client.get("/questions/api/v1/questions", headers=cookies)
                assert r.status_code == 401
                assert r.json()["error"]["code"] == "UNAUTHORIZED"
                assert r.headers["content-security-policy"] == "default-src 'self'"
            # The bare prefix leads to the page; the page is served under the prefix.
            r = await client.get("/questions", headers=alice)
            assert r.status_code in (307, 308) and r.headers["location"].endswith("/questions/")
            page = await client.get("/questions/", headers=alice)
            assert page.status_code == 200 and 'src="app.js"' in page.text
            me = await client.get("/questions/api/v1/me", headers=alice)
            assert me.json() == {"id": "alice", "name": "Alice Martin"}
            # `to` enforced: alice sees the question for ops, not the one for bob.
            listed = (await client.get("/questions/api/v1/questions", headers=alice)).json()
            assert [p["questions"][0]["id"] for p in listed["pending"]] == ["ops"]
            assert listed["pending"][0]["to"] == ["ops"]
            path = f"/questions/api/v1/questions/{tickets['bob']}/answer"
            body = {"answers": [{"id": "bob", "selected": ["A"]}]}
            r = await client.post(path, json=body, headers={**alice, "origin": base})
            assert (r.status_code, r.json()["error"]["code"]) == (404, "NOT_PENDING")
            # The event stream, streamed: only alice's question.
            async with client.stream(
                "GET", "/questions/api/v1/events", headers=alice, timeout=20
            ) as events:
                assert events.headers["content-type"].startswith("text/event-stream")
                text = ""
                async for chunk in events.aiter_text():
                    text += chunk
                    if "event: requested" in text:
                        break
                assert '"id":"ops"' in text and '"id":"bob"' not in text
            # A POST from another origin is refused.
            path = f"/questions/api/v1/questions/{tickets['ops']}/answer"
            body = {"answers": [{"id": "ops", "selected": ["A"]}]}
            r = await client.post(
                path, json=body, headers={**alice, "origin": "https://evil.example"}
            )
            assert (r.status_code, r.json()["error"]["code"]) == (403, "FORBIDDEN")
            # Answered as alice: she is the respondent, whatever the body says.
            body["respondent"] = {"id": "mallory", "name": "Mallory"}
            r = await client.post(path, json=body, headers={**alice, "origin": base})
            assert r.status_code == 200 and r.json() == {"ok": True}
            answer = await asyncio.wait_for(for_ops, 20)
            assert answer["respondent"] == {"id": "alice", "name": "Alice Martin"}
            # bob, signed in, answers his own; his name defaults to his id.
            path = f"/questions/api/v1/questions/{tickets['bob']}/answer"
            body = {"answers": [{"id": "bob", "selected": ["B"]}]}
            r = await client.post(path, json=body, headers={"cookie": "user=bob"})
            assert r.status_code == 200
            answer = await asyncio.wait_for(for_bob, 20)
            assert answer["respondent"] == {"id": "bob", "name": "bob"}


def _browser() -> List[str]:
    """The command that answers in chromium; chromium and person/tests/page's packages must be
    here (scripts/setup-browser installs them)."""
    chromium = os.environ.get("UQ_CHROMIUM", "/usr/bin/chromium")
    node = shutil.which("node")
    modules = ROOT / "person" / "tests" / "page" / "node_modules" / "playwright-core"
    assert node is not None, "no node on PATH"
    assert os.path.exists(chromium), f"no chromium at {chromium}: run scripts/setup-browser"
    assert modules.exists(), f"no {modules}: run scripts/setup-browser"
    return [node, str(BROWSER_SCRIPT)]


async def test_answered_in_chromium_under_the_prefix(ctx: uq.Context) -> None:
    async with _hosted(ctx) as hosted:
        command = _browser()
        inbox, base = hosted
        asked = asyncio.ensure_future(ctx.user_questions.ask(_question("ops", ["ops"])))
        await _pending(inbox, 1)
        browser = await asyncio.create_subprocess_exec(
            *command,
            f"{base}/questions/",
            "A",
            "user=alice",
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(browser.communicate(), 120)
        assert browser.returncode == 0, err.decode()
        seen = json.loads(out)
        assert seen["problems"] == []
        assert "Alice Martin" in seen["me"]
        assert seen["title"].startswith("(1)")
        answer = await asyncio.wait_for(asked, 20)
        assert answer["answers"] == [{"id": "ops", "selected": ["A"]}]
        assert answer["respondent"] == {"id": "alice", "name": "Alice Martin"}


class _Client:
    """Drives an ASGI app by hand: one request, the messages it sent back."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def request(
        self,
        path: str,
        *,
        root_path: str = "",
        method: str = "GET",
        query: bytes = b"",
        headers: Optional[List[Tuple[bytes, bytes]]] = None,
        body: bytes = b"",
    ) -> Tuple[int, Dict[str, str], bytes]:
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": path,
            "root_path": root_path,
            "query_string": query,
            "headers": [(b"host", b"app.test")] + (headers or []),
        }
        sent: List[Dict[str, Any]] = []
        messages = [{"type": "http.request", "body": body, "more_body": False}]

        async def receive() -> Dict[str, Any]:
            if messages:
                return messages.pop(0)
            await asyncio.Event().wait()  # never: the client stays
            raise AssertionError

        async def send(message: Dict[str, Any]) -> None:
            sent.append(message)

        await self.app(scope, receive, send)
        start = sent[0]
        head = {k.decode(): v.decode() for k, v in start["headers"]}
        return start["status"], head, b"".join(m.get("body", b"") for m in sent[1:])


async def test_the_asgi_protocol() -> None:
    inbox = uq.QuestionInbox()
    seen: List[Any] = []

    def who(scope: Any) -> Optional[Dict[str, Any]]:  # sync works too
        seen.append(scope["path"])
        return {"id": "carol"} if (b"x-user", b"carol") in scope["headers"] else None

    app = asgi_app(inbox, authenticate=who)
    assert app.token is None
    client = _Client(app)
    carol = [(b"x-user", b"carol")]
    # Current Starlette: the full path, the prefix in root_path; older servers strip it.
    for path in ("/q/api/v1/me", "/api/v1/me"):
        status, head, body = await client.request(path, root_path="/q", headers=carol)
        assert (status, json.loads(body)) == (200, {"id": "carol", "name": "carol"})
        assert head["x-content-type-options"] == "nosniff"
    status, _, _ = await client.request("/q/api/v1/me", root_path="/q")
    assert status == 401
    # The bare mount point redirects to `<prefix>/`, query kept.
    status, head, _ = await client.request("/q", root_path="/q", query=b"a=1", headers=carol)
    assert (status, head["location"]) == (307, "/q/?a=1")
    # Over 8 MiB: 413, without reading it all.
    big = b" " * (8 * 1024 * 1024 + 10)
    status, _, body = await client.request(
        "/q/api/v1/questions/1/answer", root_path="/q", method="POST", body=big, headers=carol
    )
    assert (status, json.loads(body)["error"]["code"]) == (413, "PAYLOAD_TOO_LARGE")
    # A path that is not ASCII is a path like any other (404 here).
    status, _, _ = await client.request("/q/ä/ b", root_path="/q", headers=carol)
    assert status == 404

    # Lifespan: answered, nothing else.
    lifespan = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]
    replies: List[Dict[str, Any]] = []

    async def receive() -> Dict[str, Any]:
        return lifespan.pop(0)

    async def send(message: Dict[str, Any]) -> None:
        replies.append(message)

    await app({"type": "lifespan", "asgi": {"version": "3.0"}}, receive, send)
    assert [r["type"] for r in replies] == [
        "lifespan.startup.complete",
        "lifespan.shutdown.complete",
    ]
    app.close()
    assert app.closed

    # A token instead: the login sets the cookie for the prefix and redirects under it.
    tokened = asgi_app(inbox, token="tok-1")
    assert tokened.token == "tok-1"
    status, head, _ = await _Client(tokened).request("/q/", root_path="/q", query=b"token=tok-1")
    assert (status, head["location"]) == (303, "/q/")
    assert "Path=/q" in head["set-cookie"].split("; ")
    assert len(asgi_app(inbox).token or "") == 43
    with pytest.raises(uq.UserQuestionError) as both:
        asgi_app(inbox, authenticate=who, token="tok-1")
    assert both.value.code == "INVALID_ARGUMENT"
    with pytest.raises(uq.UserQuestionError):
        asgi_app(inbox, token="not a token")


def test_exit_with_an_event_stream_open(tmp_path: pathlib.Path) -> None:
    """Interpreter exit while uvicorn serves an open event stream: a clean exit, no crash."""
    script = tmp_path / "serve.py"
    script.write_text(
        textwrap.dedent(
            """
            import asyncio, sys, threading
            import uvicorn
            import user_questions as uq
            from user_questions.web import asgi_app

            inbox = uq.QuestionInbox()
            app = asgi_app(inbox, authenticate=lambda scope: {"id": "alice"})
            config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error")
            server = uvicorn.Server(config)

            async def main():
                ctx = uq.Context()
                ctx.user_questions.register_provider(inbox)
                asyncio.ensure_future(ctx.user_questions.ask(
                    {"questions": [{"id": "q", "question": "Go?"}]}))
                serving = asyncio.ensure_future(server.serve())
                while not server.started:
                    await asyncio.sleep(0.01)
                port = server.servers[0].sockets[0].getsockname()[1]
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.write(b"GET /api/v1/events HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
                seen = b""
                while b"event: requested" not in seen:
                    seen += await reader.read(4096)
                print("streaming", flush=True)
                sys.exit(0)  # with the stream open, the ask waiting, the runtime running

            asyncio.run(main())
            """
        )
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert "streaming" in done.stdout, done.stderr
    assert done.returncode == 0, done.stderr
    assert "panicked" not in done.stderr and "Fatal Python error" not in done.stderr
