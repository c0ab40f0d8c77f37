"""The question page inside a FastAPI app (docs/reference.md §25), behind the app's own sign-in.

    pip install user-questions fastapi uvicorn
    python fastapi_app.py            # then open http://127.0.0.1:8000/login?user=alice
    python fastapi_app.py --check    # serves, answers once over HTTP as alice, prints, exits

The app's own sign-in here is a toy (a cookie naming a user); yours is whatever your app has
(a session, a JWT): ``who`` maps a request to the person, or ``None`` for 401.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any, Dict, Optional

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import RedirectResponse

import user_questions as uq
from user_questions.web import asgi_app

USERS: Dict[str, Dict[str, Any]] = {
    "alice": {"id": "alice", "name": "Alice Martin", "groups": ["ops"]},
    "bob": {"id": "bob", "name": "Bob Stone"},
}

inbox = uq.QuestionInbox()
ctx = uq.Context()
ctx.user_questions.register_provider(inbox)


def who(scope: Any) -> Optional[Dict[str, Any]]:
    """The app's own sign-in: the signed-in user, or None (the page answers 401)."""
    return USERS.get(Request(scope).cookies.get("user", ""))


app = FastAPI()
app.mount("/questions", asgi_app(inbox, authenticate=who))


@app.get("/login")
async def login(user: str) -> RedirectResponse:
    response = RedirectResponse("/questions/", status_code=303)
    response.set_cookie("user", user, httponly=True, samesite="strict")
    return response


@app.post("/deploy")
async def deploy() -> Dict[str, Any]:
    """An agent's step that needs a person of the ops group to decide."""
    answer = await ctx.user_questions.ask(
        {
            "questions": [
                {
                    "id": "deploy",
                    "question": "Deploy build 418 to production?",
                    "options": [{"label": "Deploy"}, {"label": "Wait"}],
                }
            ],
            "to": ["ops"],
        }
    )
    return dict(answer)


async def check() -> None:
    import httpx

    server = uvicorn.Server(uvicorn.Config(app, port=0, log_level="warning"))
    serving = asyncio.ensure_future(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    base = f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    async with httpx.AsyncClient(base_url=base, headers={"cookie": "user=alice"}) as client:
        deploying = asyncio.ensure_future(client.post("/deploy", timeout=30))
        while not inbox.pending():
            await asyncio.sleep(0.01)
        ticket = inbox.pending()[0]["ticket"]
        answer = {"answers": [{"id": "deploy", "selected": ["Deploy"]}]}
        sent = await client.post(f"/questions/api/v1/questions/{ticket}/answer", json=answer)
        print("answered:", sent.status_code, sent.json())
        print("agent got:", (await deploying).json())
    server.should_exit = True
    await serving


if __name__ == "__main__":
    if "--check" in sys.argv:
        asyncio.run(check())
    else:
        print("sign in: http://127.0.0.1:8000/login?user=alice; ask: POST /deploy")
        uvicorn.run(app, host="127.0.0.1", port=8000)
