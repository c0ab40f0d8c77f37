"""McpElicitationProvider against the real MCP SDK: a server and a client connected in one
process (the SDK's in-memory transport), the client answering elicitation requests."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import anyio
import mcp_types as types
from mcp import Client, MCPError
from mcp.server.mcpserver import Context as McpContext
from mcp.server.mcpserver import MCPServer

import user_questions as uq
from user_questions.adapters.mcp import (
    CLIENT_GONE,
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
    batch: Optional[List[Dict[str, Any]]] = None,
) -> MCPServer:
    """An MCP server whose tool asks the human through its own client (on the connection's
    channel, or tied to the tool call's request); the provider is given the tool's session,
    or with ``given_context`` the tool's Context itself. It asks ``batch``, else QUESTIONS."""
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
            request: Dict[str, Any] = {
                "questions": QUESTIONS if batch is None else batch,
                "signal": controller.signal,
            }
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


def accepting(content: Dict[str, Any], seen: List[types.ElicitRequestFormParams]) -> Any:
    """A client's elicitation callback that records each form it gets and accepts it with
    ``content``."""

    async def answer(_ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams)
        seen.append(params)
        return types.ElicitResult(action="accept", content=content)

    return answer


async def test_the_client_answers_the_form_and_the_asker_gets_the_answer() -> None:
    seen: List[types.ElicitRequestFormParams] = []
    answer = accepting(
        {"pkg": "npm", "ci": ["Lint", "Tests"], "ci.other": "Coverage", "name": "api"}, seen
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


#: Typed questions (§24) of every kind form mode carries, with their bounds and defaults.
TYPED: List[Dict[str, Any]] = [
    {"id": "summary", "question": "Sum it up?", "input": {"kind": "text", "maxLength": 40}},
    {"id": "ratio", "question": "Sampling ratio?", "input": {"kind": "number", "maximum": 1}},
    {
        "id": "seats",
        "header": "Seats",
        "question": "How many seats?",
        "input": {"kind": "integer", "minimum": 1, "maximum": 50, "default": 5},
    },
    {"id": "notify", "question": "Notify on-call?", "input": {"kind": "boolean"}},
    {
        "id": "launch",
        "question": "Launch day?",
        "input": {"kind": "date", "minimum": "2026-01-05"},
    },
    {"id": "window", "question": "Window opens?", "input": {"kind": "datetime"}},
    {"id": "owner", "question": "Owner?", "input": {"kind": "email"}},
    {"id": "hook", "question": "Webhook?", "input": {"kind": "url"}},
]


async def test_typed_questions_go_to_the_client_as_primitive_schemas_and_come_back() -> None:
    seen: List[types.ElicitRequestFormParams] = []
    answer = accepting(
        {
            "summary": "Fixes",
            "ratio": 0.5,
            "seats": 12,
            "notify": False,
            "launch": "2026-03-02",
            "window": "2026-06-01T22:00:00+02:00",
            "owner": "ops@example.com",
        },
        seen,
    )

    async with Client(host(batch=TYPED), mode="legacy", elicitation_callback=answer) as client:
        assert await call(client) == {
            "answers": [
                {"id": "summary", "selected": [], "value": "Fixes"},
                {"id": "ratio", "selected": [], "value": 0.5},
                {"id": "seats", "selected": [], "value": 12},
                {"id": "notify", "selected": [], "value": False},
                {"id": "launch", "selected": [], "value": "2026-03-02"},
                {"id": "window", "selected": [], "value": "2026-06-01T22:00:00+02:00"},
                {"id": "owner", "selected": [], "value": "ops@example.com"},
                {"id": "hook", "selected": []},
            ]
        }
    (params,) = seen
    # What the client received is what to_elicitation maps, field for field, and the SDK's own
    # model of a form field reads each one back with its type, format, bounds and default.
    assert params.requested_schema == to_elicitation(TYPED)["requestedSchema"]
    fields = params.requested_schema["properties"]
    assert [fields[q["id"]]["type"] for q in TYPED] == [
        "string", "number", "integer", "boolean", "string", "string", "string", "string",
    ]  # fmt: skip
    assert [fields[q["id"]].get("format") for q in TYPED] == [
        None, None, None, None, "date", "date-time", "email", "uri",
    ]  # fmt: skip
    seats = fields["seats"]
    assert (seats["minimum"], seats["maximum"], seats["default"]) == (1, 50, 5)
    assert fields["summary"]["maxLength"] == 40
    assert fields["launch"]["description"] == "Launch day?\nOn or after 2026-01-05."


async def test_a_typed_value_that_does_not_fit_is_provider_failed_naming_the_question() -> None:
    async def too_many(_ctx: Any, _params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"seats": 51})

    async with Client(host(batch=TYPED), mode="legacy", elicitation_callback=too_many) as client:
        assert await call(client) == {
            "code": "PROVIDER_FAILED",
            "message": "the elicitation answer does not fit its questions: "
            "question seats value must be at most 50",
        }


async def test_a_secret_or_file_question_is_invalid_request_and_the_client_is_never_asked() -> None:
    asked: List[Any] = []

    async def answer(_ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content={})

    for kind, why in (
        ("secret", "MCP sends sensitive data through URL mode only"),
        ("file", "its fields are strings, numbers and booleans"),
    ):
        batch = [*TYPED, {"id": "extra", "question": "And?", "input": {"kind": kind}}]
        async with Client(host(batch=batch), mode="legacy", elicitation_callback=answer) as client:
            assert await call(client) == {
                "code": "INVALID_REQUEST",
                "message": f"question extra asks for a {kind}, which MCP form elicitation "
                f"cannot carry: {why}",
            }
    assert asked == []


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


async def client_gone(
    journal: Path, *, wired: bool, request_scoped: bool
) -> Tuple[List[Any], List[Dict[str, Any]]]:
    """A tool call waits on an elicitation; its client closes the connection (the transport
    ends, no ``notifications/cancelled`` is sent). With ``wired`` the tool awaits the ask, so
    the SDK's cancellation of the call (its cancel scope) reaches it, as in the examples;
    without, the ask runs in a task of its own that the cancellation does not reach. One
    context serves the server, as a host that outlives its connections. Returns what the
    asker got, and the journal's lines."""
    asked = anyio.Event()
    settled = anyio.Event()
    got: List[Any] = []

    def record(outcome: Any) -> None:
        got.append(outcome)
        settled.set()

    def record_error(err: BaseException) -> None:
        if isinstance(err, uq.UserQuestionError):
            record((err.code, err.message))
        else:
            record(type(err).__name__)

    server = MCPServer("host")
    with uq.Context(journal=str(journal)) as questions:
        service = questions.user_questions

        @server.tool()
        async def deploy(ctx: McpContext) -> str:
            """Asks, and records what the asker got."""
            related = ctx.request_id if request_scoped else None
            dispose = service.register_provider(
                McpElicitationProvider(ctx.session, related_request_id=related)
            )
            ask = service.ask({"questions": QUESTIONS})
            if not wired:
                task = asyncio.ensure_future(ask)

                def done(task: "asyncio.Future[Any]") -> None:
                    dispose()
                    error = task.exception()
                    if error is None:
                        record(task.result())
                    else:
                        record_error(error)

                task.add_done_callback(done)
                await asyncio.shield(task)
                return "done"
            try:
                record(await ask)
            except BaseException as err:
                record_error(err)
                raise
            finally:
                dispose()
            return "done"

        async def wait(_ctx: Any, _params: types.ElicitRequestParams) -> types.ElicitResult:
            asked.set()
            await anyio.sleep_forever()
            raise AssertionError("unreachable")

        calls: List[Any] = []
        async with anyio.create_task_group() as tg:
            client = Client(server, mode="legacy", elicitation_callback=wait)
            await client.__aenter__()

            async def call() -> None:
                try:
                    await client.call_tool("deploy", {})
                except MCPError as err:
                    calls.append(err.error.code)

            tg.start_soon(call)
            with anyio.fail_after(10):  # a guard against a hang, not a timing assertion
                await asked.wait()
            await client.__aexit__(None, None, None)
            with anyio.fail_after(10):
                await settled.wait()
        assert calls == [types.CONNECTION_CLOSED]  # the client's own call ends too
    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    return got, lines


def settlements(lines: List[Dict[str, Any]]) -> List[Tuple[str, str, str]]:
    """The journal's ``settled`` lines as ``(outcome, code, message)``."""
    return [(x["outcome"], x["code"], x["message"]) for x in lines if x["event"] == "settled"]


async def test_a_client_gone_under_a_tool_call_that_withdraws_its_ask_is_ask_aborted(
    tmp_path: Path,
) -> None:
    """The tool call's cancel scope holds the ask (as in the examples): the connection's end
    cancels the call, which withdraws the ask (§4.1) — ASK_ABORTED, once, as in Node, where
    the SDK aborts the call's signal. The SDK fails the pending elicitation in the same step,
    first; that failure comes after the withdrawal and is dropped. The asker's task was
    cancelled, so the asker gets CancelledError (the conftest's checks: no task or loop error
    left behind)."""
    for request_scoped in (False, True):
        journal = tmp_path / f"scoped-{request_scoped}.jsonl"
        got, lines = await client_gone(journal, wired=True, request_scoped=request_scoped)
        assert got == ["CancelledError"]
        assert settlements(lines) == [
            ("aborted", "ASK_ABORTED", "ask_user_question was aborted before the user answered")
        ]


async def test_a_client_gone_under_an_ask_nothing_withdraws_is_provider_failed(
    tmp_path: Path,
) -> None:
    """Nothing withdraws the ask (it runs outside the tool call's cancel scope): the provider
    cannot reach the person any more — PROVIDER_FAILED naming the cause (§4.5), once, the
    same code and message as in Node."""
    assert CLIENT_GONE == "the connection to the MCP client closed before the user answered"
    for request_scoped in (False, True):
        journal = tmp_path / f"scoped-{request_scoped}.jsonl"
        got, lines = await client_gone(journal, wired=False, request_scoped=request_scoped)
        assert got == [("PROVIDER_FAILED", CLIENT_GONE)]
        assert settlements(lines) == [("failed", "PROVIDER_FAILED", CLIENT_GONE)]


async def test_a_client_already_gone_when_the_ask_starts_is_provider_failed() -> None:
    """A provider kept past its connection: the ask fails at once, with the message of a
    connection closed while waiting (the same in Node, whose SDK says ``Not connected``)."""
    server = MCPServer("host")
    sessions: List[Any] = []
    reached: List[Any] = []

    @server.tool()
    async def keep(ctx: McpContext) -> str:
        """Keeps the tool call's session."""
        sessions.append(ctx.session)
        return "kept"

    async def answer(_ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        reached.append(params)
        return types.ElicitResult(action="accept", content={})

    async with Client(server, mode="legacy", elicitation_callback=answer) as client:
        await client.call_tool("keep", {})
    with uq.Context() as questions:
        questions.user_questions.register_provider(McpElicitationProvider(sessions[0]))
        try:
            await questions.user_questions.ask({"questions": QUESTIONS})
        except uq.UserQuestionError as err:
            assert (err.code, err.message) == ("PROVIDER_FAILED", CLIENT_GONE)
        else:
            raise AssertionError("the ask was answered")
    assert reached == []
