"""McpElicitationProvider against the real MCP SDK: a server and a client connected in one
process (the SDK's in-memory transport), the client answering elicitation requests."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Dict, List, Optional

import anyio
import mcp_types as types
from mcp import Client
from mcp.server.mcpserver import Context as McpContext
from mcp.server.mcpserver import MCPServer

import user_questions as uq
from user_questions.adapters.mcp import (
    NO_ELICITATION,
    McpElicitationProvider,
    supports_form_elicitation,
    to_elicitation,
)

QUESTIONS: List[Dict[str, Any]] = [
    {
        "id": "pkg",
        "header": "Packages",
        "question": "Which package manager should we use?",
        "options": [
            {"label": "pnpm (Recommended)", "description": "Fast, strict node_modules."},
            {"label": "npm"},
        ],
    },
    {
        "id": "ci",
        "question": "Which checks should run in CI?",
        "options": [{"label": "Lint"}, {"label": "Tests"}],
        "multiSelect": True,
    },
    {"id": "name", "question": "What should the service be called?"},
]


def host(
    abort_after_asked: Optional[anyio.Event] = None,
    *,
    request_scoped: bool = False,
    given_context: bool = False,
) -> MCPServer:
    """An MCP server whose tool asks the human through its own client (on the connection's
    channel, or tied to the tool call's request); the provider is given the tool's session,
    or with ``given_context`` the tool's Context itself."""
    server = MCPServer("host")

    @server.tool()
    async def deploy(ctx: McpContext) -> str:
        """Asks the questions and returns the answer (or the error) as JSON."""
        related = ctx.request_id if request_scoped else None
        with uq.Context() as questions:
            questions.user_questions.register_provider(
                McpElicitationProvider(
                    ctx if given_context else ctx.session, related_request_id=related
                )
            )
            controller = uq.AbortController()
            request: Dict[str, Any] = {"questions": QUESTIONS, "signal": controller.signal}
            try:
                if abort_after_asked is None:
                    answer = await questions.user_questions.ask(request)
                else:
                    task = asyncio.ensure_future(questions.user_questions.ask(request))
                    await abort_after_asked.wait()
                    controller.abort()
                    answer = await task
            except uq.UserQuestionError as err:
                return json.dumps({"code": err.code, "message": err.message})
            return json.dumps(answer)

    return server


async def call(client: Client) -> Any:
    result = await client.call_tool("deploy", {})
    assert not result.is_error, result
    (content,) = result.content
    assert isinstance(content, types.TextContent)
    return json.loads(content.text)


async def test_the_client_answers_the_form_and_the_asker_gets_the_answer() -> None:
    seen: List[types.ElicitRequestFormParams] = []

    async def answer(_ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams)
        seen.append(params)
        return types.ElicitResult(
            action="accept",
            content={"pkg": "npm", "ci": ["Lint", "Tests"], "ci.other": "Coverage", "name": "api"},
        )

    for request_scoped, given_context in ((False, False), (True, False), (False, True)):
        async with Client(
            host(request_scoped=request_scoped, given_context=given_context),
            mode="legacy",
            elicitation_callback=answer,
        ) as client:
            assert await call(client) == {
                "answers": [
                    {"id": "pkg", "selected": ["npm"]},
                    {"id": "ci", "selected": ["Lint", "Tests"], "custom": "Coverage"},
                    {"id": "name", "selected": [], "custom": "api"},
                ]
            }
    expected = to_elicitation(QUESTIONS)
    assert len(seen) == 3
    for params in seen:
        assert params.message == expected["message"]
        assert params.requested_schema == expected["requestedSchema"]


async def test_decline_and_cancel_are_ask_cancelled() -> None:
    for action in ("decline", "cancel"):

        async def refuse(_ctx: Any, _params: types.ElicitRequestParams) -> types.ElicitResult:
            return types.ElicitResult(action=action)  # noqa: B023

        async with Client(host(), mode="legacy", elicitation_callback=refuse) as client:
            assert await call(client) == {
                "code": "ASK_CANCELLED",
                "message": "the user cancelled ask_user_question",
            }


async def test_an_answer_that_does_not_fit_is_provider_failed_naming_the_field() -> None:
    async def wrong(_ctx: Any, _params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"pkg": "yarn"})

    async with Client(host(), mode="legacy", elicitation_callback=wrong) as client:
        assert await call(client) == {
            "code": "PROVIDER_FAILED",
            "message": 'elicitation field "pkg" selects "yarn", which is not one of its options',
        }


async def test_a_client_without_elicitation_fails_the_ask_with_a_clear_message() -> None:
    async with Client(host(), mode="legacy") as client:
        assert await call(client) == {"code": "PROVIDER_FAILED", "message": NO_ELICITATION}


async def test_a_withdrawn_ask_cancels_the_clients_request() -> None:
    asked = anyio.Event()
    cancelled = anyio.Event()

    async def wait_forever(_ctx: Any, _params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            cancelled.set()
            raise
        raise AssertionError("unreachable")

    async with Client(host(asked), mode="legacy", elicitation_callback=wait_forever) as client:
        assert await call(client) == {
            "code": "ASK_ABORTED",
            "message": "ask_user_question was aborted before the user answered",
        }
        with anyio.fail_after(10):
            await cancelled.wait()


async def test_a_2026_07_28_connection_without_a_back_channel_fails_clearly() -> None:
    """The stateless revision sends no server-to-client requests: the provider cannot ask,
    says so, and the client is never called (multi-round-trip input is not used)."""
    called: List[Any] = []

    async def answer(_ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        called.append(params)
        return types.ElicitResult(action="accept", content={})

    async with Client(host(), elicitation_callback=answer) as client:
        assert client.session.protocol_version == "2026-07-28"
        assert await call(client) == {
            "code": "PROVIDER_FAILED",
            "message": "this MCP connection cannot send requests to the client (no back-channel,"
            " e.g. a stateless 2026-07-28 request); the client cannot be asked",
        }
    assert called == []


def test_anything_but_a_session_or_a_tool_context_is_refused_when_made() -> None:
    for wrong in (object(), None, "session", MCPServer("host")):
        try:
            McpElicitationProvider(wrong)
        except uq.UserQuestionError as err:
            assert err.code == "INVALID_ARGUMENT"
            assert err.message == (
                "McpElicitationProvider needs an MCP ServerSession (in a tool: ctx.session) "
                f"or a tool's Context, not {type(wrong).__name__}"
            )
        else:
            raise AssertionError(f"{wrong!r} was accepted")


async def test_an_error_from_the_client_is_provider_failed_with_the_sdks_message() -> None:
    """A client that answers ``elicitation/create`` with a JSON-RPC error fails the ask with
    ``PROVIDER_FAILED``, the SDK's message after a prefix that says who failed."""

    async def no_ui(_ctx: Any, _params: types.ElicitRequestParams) -> types.ErrorData:
        return types.ErrorData(code=types.INTERNAL_ERROR, message="no form UI on this client")

    async with Client(host(), mode="legacy", elicitation_callback=no_ui) as client:
        assert await call(client) == {
            "code": "PROVIDER_FAILED",
            "message": "the MCP client failed the elicitation: no form UI on this client",
        }


def test_form_elicitation_is_an_empty_elicitation_capability_or_one_with_form() -> None:
    """What a client declared, as the SDK's model or as a plain dict: an ``elicitation``
    capability that is empty or has ``form`` can elicit forms; none, or one with only ``url``,
    cannot."""
    form, url = types.FormElicitationCapability(), types.UrlElicitationCapability()
    cases = [
        (types.ElicitationCapability(), {}, True),
        (types.ElicitationCapability(form=form), {"form": {}}, True),
        (types.ElicitationCapability(form=form, url=url), {"form": {}, "url": {}}, True),
        (types.ElicitationCapability(url=url), {"url": {}}, False),
        (None, None, False),
    ]
    for model, plain, expected in cases:
        declared = types.ClientCapabilities(elicitation=model)
        assert supports_form_elicitation(declared) is expected, model
        as_dict: Dict[str, Any] = {} if plain is None else {"elicitation": plain}
        assert supports_form_elicitation(as_dict) is expected, plain
    assert supports_form_elicitation(None) is False
    assert supports_form_elicitation({"elicitation": "form"}) is False
