"""``uq mcp`` spawned by the official MCP Python client (``stdio_client`` + ``ClientSession``):
the handshake, ``tools/list`` (§9's definition as the tool's input schema), ``tools/call``
answered by ``--auto`` and its failure results, ``ping``, an unknown tool, and exit on EOF."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any, Dict

import mcp_types as types
import pytest
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client

import user_questions as uq

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def uq_bin() -> str:
    """The ``uq`` binary, built from this tree (``$UQ_BIN`` overrides)."""
    if os.environ.get("UQ_BIN"):
        return os.environ["UQ_BIN"]
    built = subprocess.run(
        [
            "cargo",
            "build",
            "-q",
            "-p",
            "user-questions-cli",
            "--bin",
            "uq",
            "--message-format=json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    for line in built.stdout.splitlines():
        message = json.loads(line)
        if message.get("reason") == "compiler-artifact" and message.get("executable"):
            if Path(message["executable"]).name == "uq":
                return str(message["executable"])
    raise AssertionError("cargo built no uq executable")


ARGS: Dict[str, Any] = {
    "questions": [
        {
            "id": "pkg",
            "question": "Which package manager should we use?",
            "options": [{"label": "pnpm (Recommended)"}, {"label": "npm"}],
        },
        {
            "id": "ci",
            "question": "Which checks should run in CI?",
            "options": [{"label": "Lint"}, {"label": "Tests"}],
            "multi_select": True,
        },
    ]
}


def server(uq_bin: str, *args: str) -> StdioServerParameters:
    return StdioServerParameters(command=uq_bin, args=["mcp", *args])


async def test_the_python_client_lists_and_calls_ask_user_question(uq_bin: str) -> None:
    async with stdio_client(server(uq_bin, "--auto", "recommended")) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            assert init.protocol_version == "2025-11-25"
            assert init.server_info.name == "uq"
            assert init.capabilities.tools is not None
            await session.send_ping()

            listed = await session.list_tools()
            (tool,) = listed.tools
            definition = uq.AskUserQuestionTool(uq.Context()).definition
            assert tool.name == definition["name"]
            assert tool.description == definition["description"]
            assert tool.input_schema == definition["parameters"]

            called = await session.call_tool("ask_user_question", ARGS)
            answer = {
                "answers": [
                    {"id": "pkg", "selected": ["pnpm (Recommended)"]},
                    {"id": "ci", "selected": ["Lint"]},
                ]
            }
            assert called.is_error is False
            (content,) = called.content
            assert isinstance(content, types.TextContent)
            assert content.text == (
                '{"answers":[{"id":"pkg","selected":["pnpm (Recommended)"]},'
                '{"id":"ci","selected":["Lint"]}]}'
            )
            assert called.structured_content == answer


async def test_seam_failures_are_error_results_and_an_unknown_tool_is_a_protocol_error(
    uq_bin: str,
) -> None:
    async with stdio_client(server(uq_bin, "--auto", "first")) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            empty = await session.call_tool("ask_user_question", {"questions": []})
            assert empty.is_error is True
            (content,) = empty.content
            assert isinstance(content, types.TextContent)
            assert content.text == "Error: ask_user_question requires at least one question"
            assert empty.structured_content == {
                "error": {
                    "name": "UserQuestionError",
                    "code": "EMPTY_QUESTIONS",
                    "message": "ask_user_question requires at least one question",
                }
            }
            bad = await session.call_tool("ask_user_question", {"questions": [{"id": "a"}]})
            assert bad.is_error is True
            assert bad.structured_content is not None
            assert bad.structured_content["error"]["code"] == "INVALID_REQUEST"
            assert (
                bad.structured_content["error"]["message"]
                == "questions[0].question must be a string"
            )

            with pytest.raises(MCPError) as unknown:
                await session.call_tool("no_such_tool", {})
            assert unknown.value.error.code == -32602
            assert unknown.value.error.message == "Unknown tool: no_such_tool"


def raw_exchange(uq_bin: str, lines: list[str], *args: str) -> list[Dict[str, Any]]:
    """Writes ``lines`` to ``uq mcp``, closes stdin, and returns its responses (it must exit 0)."""
    done = subprocess.run(
        [uq_bin, "mcp", *args],
        input="".join(line + "\n" for line in lines),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_initialize_echoes_a_supported_revision_else_answers_the_latest(uq_bin: str) -> None:
    def init(version: str, id: int) -> str:
        return json.dumps(
            {
                "jsonrpc": "2.0",
                "id": id,
                "method": "initialize",
                "params": {
                    "protocolVersion": version,
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            }
        )

    versions = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28", "1999-01-01"]
    responses = raw_exchange(uq_bin, [init(v, i) for i, v in enumerate(versions)], "--auto", "skip")
    got = {r["id"]: r["result"]["protocolVersion"] for r in responses}
    assert got == {
        0: "2024-11-05",
        1: "2025-03-26",
        2: "2025-06-18",
        3: "2025-11-25",
        4: "2025-11-25",
        5: "2025-11-25",
    }


def test_protocol_errors_and_the_structured_content_of_older_revisions(uq_bin: str) -> None:
    call = {
        "jsonrpc": "2.0",
        "id": "c",
        "method": "tools/call",
        "params": {"name": "ask_user_question", "arguments": ARGS},
    }
    lines = [
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-03-26",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            }
        ),
        '{"jsonrpc":"2.0","method":"notifications/initialized"}',
        '{"jsonrpc":"2.0","id":2,"method":"resources/list"}',
        "not json",
        "[]",
        json.dumps(call),
        '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{}}',
    ]
    responses = raw_exchange(uq_bin, lines, "--auto", "skip")
    by_id = {json.dumps(r.get("id")): r for r in responses}
    assert by_id["2"]["error"] == {"code": -32601, "message": "Method not found: resources/list"}
    errors = [r["error"] for r in responses if r.get("id") is None]
    assert [e["code"] for e in errors] == [-32700, -32600]
    assert by_id["3"]["error"]["code"] == -32602
    result = by_id['"c"']["result"]
    assert result == {
        "content": [
            {
                "type": "text",
                "text": '{"answers":[{"id":"pkg","selected":[]},{"id":"ci","selected":[]}]}',
            }
        ],
        "isError": False,
    }
    assert len(responses) == 6  # one per request, none for the notification


def test_without_a_mode_or_a_terminal_every_call_fails_no_provider(uq_bin: str) -> None:
    # A session of its own: no controlling terminal to ask on (stdin/stdout carry the protocol).
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "ask_user_question", "arguments": ARGS},
    }
    done = subprocess.run(
        [uq_bin, "mcp"],
        input=json.dumps(call) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
        start_new_session=True,
    )
    assert done.returncode == 0, done.stderr
    (response,) = [json.loads(line) for line in done.stdout.splitlines()]
    assert response["id"] == 1
    assert response["result"]["isError"] is True
    assert response["result"]["content"] == [
        {"type": "text", "text": "Error: no user-questions provider is registered"}
    ]
    assert "no terminal to ask on" in done.stderr


def test_at_end_of_input_a_waiting_call_is_withdrawn_and_answered_ask_aborted(uq_bin: str) -> None:
    # --web keeps the question pending (nobody opens the page) until stdin closes.
    call = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "ask_user_question", "arguments": ARGS},
    }
    (response,) = raw_exchange(uq_bin, [json.dumps(call)], "--web")
    message = "ask_user_question was aborted before the user answered"
    assert response["id"] == 7
    assert response["result"] == {
        "content": [{"type": "text", "text": f"Error: {message}"}],
        "isError": True,
        "structuredContent": {
            "error": {"name": "UserQuestionError", "code": "ASK_ABORTED", "message": message}
        },
    }


def test_a_line_that_is_not_utf8_is_a_parse_error_and_crlf_lines_are_read(uq_bin: str) -> None:
    ping = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    done = subprocess.run(
        [uq_bin, "mcp", "--auto", "first"],
        input=b"\xff\xfe\n" + ping + b"\r\n",
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    first, second = [json.loads(line) for line in done.stdout.splitlines()]
    assert first["id"] is None and first["error"]["code"] == -32700
    assert second == {"jsonrpc": "2.0", "id": 1, "result": {}}


def _http(url: str, token: str, body: Any = None) -> Any:
    import urllib.request

    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="GET" if body is None else "POST")
    request.add_header("Authorization", f"Bearer {token}")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


async def test_with_web_the_person_answers_or_cancels_on_the_page_api(
    uq_bin: str, tmp_path: Path
) -> None:
    """``uq mcp --web``: a call waits until the page's API answers it (the result carries that
    answer), and a question cancelled there is the ``ASK_CANCELLED`` result."""
    import asyncio
    import re
    import urllib.parse

    stderr_path = tmp_path / "stderr.txt"
    with stderr_path.open("w") as errlog:
        async with stdio_client(server(uq_bin, "--web"), errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                found = None
                while found is None:
                    found = re.search(r"open (\S+)", stderr_path.read_text())
                    await asyncio.sleep(0.01)
                url = urllib.parse.urlsplit(found[1])
                token = urllib.parse.parse_qs(url.query)["token"][0]
                api = f"{url.scheme}://{url.netloc}/api/v1/questions"

                async def pending_ticket() -> int:
                    while True:
                        pending = (await asyncio.to_thread(_http, api, token))["pending"]
                        if pending:
                            ticket: int = pending[0]["ticket"]
                            return ticket
                        await asyncio.sleep(0.01)

                call = asyncio.ensure_future(session.call_tool("ask_user_question", ARGS))
                ticket = await pending_ticket()
                answer = {
                    "answers": [
                        {"id": "pkg", "selected": ["npm"]},
                        {"id": "ci", "selected": ["Tests"], "custom": "and e2e"},
                    ]
                }
                assert await asyncio.to_thread(_http, f"{api}/{ticket}/answer", token, answer) == {
                    "ok": True
                }
                answered = await call
                assert answered.is_error is False
                assert answered.structured_content == answer

                call = asyncio.ensure_future(session.call_tool("ask_user_question", ARGS))
                ticket = await pending_ticket()
                assert await asyncio.to_thread(_http, f"{api}/{ticket}/cancel", token, {}) == {
                    "ok": True
                }
                cancelled = await call
                assert cancelled.is_error is True
                assert cancelled.structured_content == {
                    "error": {
                        "name": "UserQuestionError",
                        "code": "ASK_CANCELLED",
                        "message": "the user cancelled ask_user_question",
                    }
                }
