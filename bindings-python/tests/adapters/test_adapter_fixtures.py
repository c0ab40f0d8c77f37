"""The shared adapter fixtures (tests/adapters/fixtures): the same input gives the same
output here and in Node (§21)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Dict, List

import pytest

import user_questions as uq
from user_questions.adapters import claude, codex, mcp

FIXTURES = Path(__file__).resolve().parents[3] / "tests" / "adapters" / "fixtures"


def load(name: str) -> Dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


def cases(name: str, group: str, *, only_ok: bool = False) -> List[Any]:
    return [
        pytest.param(case, id=case["name"])
        for case in load(name)[group]
        if not (only_ok and "error" in case)
    ]


def check(case: Dict[str, Any], key: str, run: Callable[[], Any]) -> None:
    if "error" in case:
        with pytest.raises(uq.UserQuestionError) as caught:
            run()
        assert (caught.value.code, caught.value.message) == (
            case["error"]["code"],
            case["error"]["message"],
        )
    else:
        assert run() == case[key]


def test_every_fixture_file_has_cases_of_both_kinds() -> None:
    for name, groups in {
        "claude": ("toRequest", "toResult"),
        "codex": ("toRequest", "toResult"),
        "mcp": ("toElicitation", "fromElicitation"),
    }.items():
        fixture = load(name)
        for group in groups:
            assert any("error" in c for c in fixture[group]), (name, group)
            assert any("error" not in c for c in fixture[group]), (name, group)


@pytest.mark.parametrize("case", cases("claude", "toRequest"))
def test_claude_to_request(case: Dict[str, Any]) -> None:
    check(case, "request", lambda: claude.to_request(case["input"]))


@pytest.mark.parametrize("case", cases("claude", "toResult"))
def test_claude_to_result(case: Dict[str, Any]) -> None:
    check(case, "result", lambda: claude.to_result(case["input"], case["answer"]))


@pytest.mark.parametrize("case", cases("codex", "toRequest"))
def test_codex_to_request(case: Dict[str, Any]) -> None:
    check(case, "request", lambda: codex.to_request(case["input"]))


@pytest.mark.parametrize("case", cases("codex", "toResult"))
def test_codex_to_result(case: Dict[str, Any]) -> None:
    check(case, "result", lambda: codex.to_result(case["input"], case["answer"]))


@pytest.mark.parametrize("case", cases("mcp", "toElicitation"))
def test_mcp_to_elicitation(case: Dict[str, Any]) -> None:
    check(case, "elicitation", lambda: mcp.to_elicitation(case["questions"]))


@pytest.mark.parametrize("case", cases("mcp", "fromElicitation"))
def test_mcp_from_elicitation(case: Dict[str, Any]) -> None:
    check(case, "answer", lambda: mcp.from_elicitation(case["questions"], case["result"]))


@pytest.mark.parametrize(
    "case", cases("claude", "toRequest", only_ok=True) + cases("codex", "toRequest", only_ok=True)
)
def test_every_converted_request_passes_the_seams_checks(case: Dict[str, Any]) -> None:
    """A converted request is one the seam accepts: it reaches the provider unchanged."""
    seen: List[Any] = []

    class Recorder:
        def ask(self, request: Dict[str, Any]) -> Dict[str, Any]:
            seen.append(request["questions"])
            return {"answers": [{"id": q["id"], "selected": []} for q in request["questions"]]}

    with uq.Context() as ctx:
        ctx.user_questions.register_provider(Recorder())
        ctx.user_questions.ask_blocking(case["request"])
    assert seen == [case["request"]["questions"]]


@pytest.mark.parametrize("case", cases("mcp", "toElicitation", only_ok=True))
def test_every_elicitation_schema_is_one_the_protocol_accepts(case: Dict[str, Any]) -> None:
    """Every field is a PrimitiveSchemaDefinition of the 2025-11-25 schema (the model the MCP
    SDK itself checks elicitation schemas with), nothing is required, and every question
    with options has its Other field."""
    from mcp_types._v2025_11_25 import PrimitiveSchemaDefinition, RequestedSchema
    from pydantic import TypeAdapter

    schema = case["elicitation"]["requestedSchema"]
    RequestedSchema.model_validate(schema)
    field = TypeAdapter(PrimitiveSchemaDefinition)
    for prop in schema["properties"].values():
        field.validate_python(prop)
    assert "required" not in schema
    for question in case["questions"]:
        assert (f"{question['id']}.other" in schema["properties"]) == bool(question.get("options"))


def test_the_adapters_import_no_framework_until_used() -> None:
    """`user_questions` never imports an adapter; an adapter module imports its framework
    (mcp, claude_agent_sdk) only when a provider asks or a handler runs."""
    import subprocess
    import sys

    code = (
        "import sys, user_questions\n"
        "assert 'user_questions.adapters' not in sys.modules\n"
        "from user_questions.adapters import claude, codex, mcp\n"
        "loaded = [m for m in ('mcp', 'mcp_types', 'claude_agent_sdk') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
