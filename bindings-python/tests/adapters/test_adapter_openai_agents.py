"""The OpenAI Agents SDK adapter run by the SDK's own Runner: a fake model (the SDK's ``Model``
interface, no network) emits an ``ask_user_question`` call, then a final message; the tool
asks through the context's provider and the model receives §9's result."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path
from typing import Any, AsyncIterator, Callable, Dict, List, Optional

import pytest
from agents import Agent as SdkAgent
from agents import FunctionTool, Model, ModelResponse, RunConfig, Runner, Usage
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

import user_questions as uq
from user_questions.adapters.openai_agents import ask_user_question_tool

#: No traces: the SDK would start its exporter thread (and want an API key) otherwise.
NO_TRACING = RunConfig(tracing_disabled=True)

ARGS: Dict[str, Any] = {
    "questions": [
        {
            "id": "pkg",
            "header": "Packages",
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


class FakeModel(Model):
    """Answers the first turn with one function call and the next with a message (streamed as
    one completed-response event when the run streams); records every input it was given."""

    def __init__(self, arguments: str, call_id: str = "call_1") -> None:
        self.arguments = arguments
        self.call_id = call_id
        self.inputs: List[Any] = []
        self.tools: List[Any] = []

    async def get_response(
        self,
        system_instructions: Optional[str],
        input: Any,
        model_settings: Any,
        tools: List[Any],
        output_schema: Any,
        handoffs: Any,
        tracing: Any,
        *,
        previous_response_id: Optional[str] = None,
        conversation_id: Optional[str] = None,
        prompt: Any = None,
    ) -> ModelResponse:
        self.inputs.append(input)
        self.tools = tools
        if len(self.inputs) == 1:
            call = ResponseFunctionToolCall(
                type="function_call",
                id="fc_1",
                call_id=self.call_id,
                name="ask_user_question",
                arguments=self.arguments,
                status="completed",
            )
            return ModelResponse(output=[call], usage=Usage(), response_id=None)
        text = ResponseOutputText(type="output_text", text="done", annotations=[])
        message = ResponseOutputMessage(
            type="message", id="msg_1", role="assistant", status="completed", content=[text]
        )
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    async def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        """The same turn as one completed-response event."""
        turn = await self.get_response(*args, **kwargs)
        response = Response(
            id="resp_1",
            created_at=0,
            model="fake",
            object="response",
            output=turn.output,
            parallel_tool_calls=False,
            tool_choice="auto",
            tools=[],
        )
        yield ResponseCompletedEvent(
            type="response.completed", response=response, sequence_number=0
        )


def tool_output(model: FakeModel) -> Dict[str, Any]:
    """The function call output the model was sent on its second turn, parsed."""
    items: List[Any] = model.inputs[1]
    (output,) = [
        i for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"
    ]
    assert output["call_id"] == model.call_id
    parsed: Dict[str, Any] = json.loads(output["output"])
    return parsed


async def run(tool: FunctionTool, arguments: str) -> FakeModel:
    model = FakeModel(arguments)
    agent = SdkAgent(name="assistant", instructions="Ask first.", model=model, tools=[tool])
    result = await Runner.run(agent, "Set up the project.", run_config=NO_TRACING)
    assert result.final_output == "done"
    return model


def test_the_function_tool_has_the_definition_of_section_9() -> None:
    tool = ask_user_question_tool(uq.Context())
    definition = uq.AskUserQuestionTool(uq.Context()).definition
    assert isinstance(tool, FunctionTool)
    assert tool.name == definition["name"] == "ask_user_question"
    assert tool.description == definition["description"]
    assert tool.params_json_schema == definition["parameters"]
    assert tool.strict_json_schema is False


async def test_the_runner_calls_the_tool_and_the_model_reads_the_answer() -> None:
    ctx = uq.Context()
    ctx.user_questions.register_provider(uq.AutoResponder("recommended"))
    model = await run(ask_user_question_tool(ctx), json.dumps(ARGS))
    assert [t.name for t in model.tools] == ["ask_user_question"]
    answer = {
        "answers": [
            {"id": "pkg", "selected": ["pnpm (Recommended)"]},
            {"id": "ci", "selected": ["Lint"]},
        ]
    }
    assert tool_output(model) == {
        "isError": False,
        "value": answer,
        "content": [
            {
                "type": "text",
                "text": '{"answers":[{"id":"pkg","selected":["pnpm (Recommended)"]},'
                '{"id":"ci","selected":["Lint"]}]}',
            }
        ],
    }


class Recording:
    def __init__(self) -> None:
        self.requests: List[Any] = []

    async def ask(self, request: Any) -> Any:
        self.requests.append(request)
        await asyncio.sleep(0)
        return {
            "answers": [
                {"id": q["id"], "selected": [], "custom": "later"} for q in request["questions"]
            ]
        }


async def test_the_provider_gets_the_mapped_questions_the_agent_and_the_call_id_as_key() -> None:
    ctx = uq.Context()
    provider = Recording()
    ctx.user_questions.register_provider(provider)
    root = uq.Agent("root")
    ctx.agents.enter(root)
    tool = ask_user_question_tool(ctx.user_questions, root, timeout=30, key_from_call_id=True)
    model = await run(tool, json.dumps(ARGS))
    (request,) = provider.requests
    assert request["questions"][1] == {
        "id": "ci",
        "question": "Which checks should run in CI?",
        "options": [{"label": "Lint"}, {"label": "Tests"}],
        "multiSelect": True,
    }
    assert request["agent"] is root
    assert request["key"] == "call_1"
    assert "expiresAt" in request
    assert tool_output(model)["value"]["answers"][0] == {
        "id": "pkg",
        "selected": [],
        "custom": "later",
    }


def failure(code: str, message: str) -> Dict[str, Any]:
    return {
        "isError": True,
        "error": {"name": "UserQuestionError", "code": code, "message": message},
        "content": [{"type": "text", "text": f"Error: {message}"}],
    }


async def test_seam_failures_reach_the_model_as_the_failure_result() -> None:
    ctx = uq.Context()
    model = await run(ask_user_question_tool(ctx), json.dumps(ARGS))
    assert tool_output(model) == failure("NO_PROVIDER", "no user-questions provider is registered")

    ctx.user_questions.register_provider(uq.AutoResponder("first"))
    model = await run(ask_user_question_tool(ctx), '{"questions": []}')
    assert tool_output(model) == failure(
        "EMPTY_QUESTIONS", "ask_user_question requires at least one question"
    )
    model = await run(ask_user_question_tool(ctx), '{"questions": [{"id": 1}]}')
    assert tool_output(model) == failure("INVALID_REQUEST", "questions[0].id must be a string")
    model = await run(ask_user_question_tool(ctx), "not json")
    assert tool_output(model)["error"]["code"] == "INVALID_REQUEST"


async def test_an_agent_that_is_not_live_is_refused() -> None:
    ctx = uq.Context()
    ctx.user_questions.register_provider(uq.AutoResponder("first"))
    model = await run(ask_user_question_tool(ctx, uq.Agent("gone")), json.dumps(ARGS))
    assert tool_output(model)["error"]["code"] == "CALLER_NOT_LIVE"


async def test_a_cancelled_run_withdraws_the_ask() -> None:
    ctx = uq.Context()
    inbox = uq.QuestionInbox()
    ctx.user_questions.register_provider(inbox)
    events: List[Any] = []
    inbox.subscribe(events.append)
    model = FakeModel(json.dumps(ARGS))
    agent = SdkAgent(name="assistant", model=model, tools=[ask_user_question_tool(ctx)])
    task = asyncio.ensure_future(Runner.run(agent, "Set up the project.", run_config=NO_TRACING))
    while not inbox.pending():
        await asyncio.sleep(0.01)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    while len(events) < 2:
        await asyncio.sleep(0.01)
    assert [e["type"] for e in events] == ["requested", "resolved"]
    assert events[1]["outcome"] == "aborted"
    assert inbox.pending() == []


def settled_by(inbox: uq.QuestionInbox, act: Callable[[int], Any]) -> List[Any]:
    """Runs ``act(ticket)`` as soon as the inbox has the question; returns the events."""
    events: List[Any] = []

    def on_event(event: Any) -> None:
        events.append(event)
        if event["type"] == "requested":
            act(event["ticket"])

    inbox.subscribe(on_event)
    return events


def settling(how: str, inbox: uq.QuestionInbox, dispose: Callable[[], Any]) -> Callable[[int], Any]:
    """What settles the ask ``how``: the person cancelling, the page failing, the provider
    disposed, or nothing (the deadline does)."""
    acts: Dict[str, Callable[[int], Any]] = {
        "cancel": inbox.cancel,
        "fail": lambda ticket: inbox.fail(ticket, "the page closed"),
        "dispose": lambda ticket: dispose(),
        "deadline": lambda ticket: None,
    }
    return acts[how]


async def test_every_outcome_reaches_the_model_as_the_failure_result() -> None:
    """The person cancelling, a provider failing, the provider going away, a deadline, a
    delegated caller: each is the failure result of §9 the model reads, never a raise."""
    cases = [
        ("cancel", "ASK_CANCELLED", "the user cancelled ask_user_question"),
        ("fail", "PROVIDER_FAILED", "the page closed"),
        (
            "dispose",
            "ASK_ABORTED",
            "the user-questions provider was disposed before the user answered",
        ),
        ("deadline", "ASK_TIMED_OUT", "the user did not answer ask_user_question within 50 ms"),
    ]
    for how, code, message in cases:
        ctx = uq.Context()
        inbox = uq.QuestionInbox()
        dispose = ctx.user_questions.register_provider(inbox)
        events = settled_by(inbox, settling(how, inbox, dispose))
        timeout = 0.05 if how == "deadline" else None
        model = await run(ask_user_question_tool(ctx, timeout=timeout), json.dumps(ARGS))
        assert tool_output(model) == failure(code, message), how
        assert [e["type"] for e in events] == ["requested", "resolved"], how

    ctx = uq.Context()
    ctx.user_questions.register_provider(uq.AutoResponder("first"))
    root, child = uq.Agent("root"), uq.Agent("child")
    ctx.agents.enter(root)
    ctx.agents.enter(child, root)
    model = await run(ask_user_question_tool(ctx, child), json.dumps(ARGS))
    assert tool_output(model)["error"]["code"] == "DELEGATED_CALLER"


async def test_without_key_from_call_id_the_ask_has_no_key() -> None:
    ctx = uq.Context()
    provider = Recording()
    ctx.user_questions.register_provider(provider)
    await run(ask_user_question_tool(ctx), json.dumps(ARGS))
    (request,) = provider.requests
    assert "key" not in request


async def test_the_sdk_tool_timeout_withdraws_the_ask() -> None:
    """The SDK's own per-call timeout (``FunctionTool.timeout_seconds``) cancels the call: the
    ask is withdrawn (the inbox reports ``aborted``) and the model reads the SDK's message."""
    ctx = uq.Context()
    inbox = uq.QuestionInbox()
    ctx.user_questions.register_provider(inbox)
    events = settled_by(inbox, lambda ticket: None)
    tool = dataclasses.replace(ask_user_question_tool(ctx), timeout_seconds=0.05)
    model = await run(tool, json.dumps(ARGS))
    items: List[Any] = model.inputs[1]
    (output,) = [
        i for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"
    ]
    assert output["output"] == "Tool 'ask_user_question' timed out after 0.05 seconds."
    assert [(e["type"], e.get("outcome")) for e in events] == [
        ("requested", None),
        ("resolved", "aborted"),
    ]
    assert inbox.pending() == []


async def test_the_journal_records_the_runs_asks(tmp_path: Path) -> None:
    """Every call the runner makes is journaled (§18) with the agent, the call id as key and
    the deadline; a refused call as ``refused``; a cancelled run's ask as ``aborted``."""
    journal = tmp_path / "asks.jsonl"
    ctx = uq.Context(journal=str(journal))
    inbox = uq.QuestionInbox()
    ctx.user_questions.register_provider(inbox)
    root = uq.Agent("root")
    ctx.agents.enter(root)
    events = settled_by(
        inbox,
        lambda ticket: inbox.answer(
            ticket, {"answers": [{"id": "pkg", "selected": ["npm"]}, {"id": "ci", "selected": []}]}
        ),
    )
    tool = ask_user_question_tool(ctx, root, timeout=600, key_from_call_id=True)
    await run(tool, json.dumps(ARGS))
    await run(tool, '{"questions": [{"id": 1}]}')
    lines = [json.loads(line) for line in journal.read_text(encoding="utf-8").splitlines()]
    for line in lines:
        del line["at"]
        line.pop("ms", None)
    assert lines == [
        {
            "event": "asked",
            "ask": 1,
            "agentId": "root",
            "key": "call_1",
            "questions": events[0]["questions"],  # as the provider got them
            "timeoutMs": 600000,
        },
        {
            "event": "settled",
            "ask": 1,
            "outcome": "answered",
            "answer": {
                "answers": [{"id": "pkg", "selected": ["npm"]}, {"id": "ci", "selected": []}]
            },
        },
        {
            "event": "refused",
            "ask": 2,
            "agentId": "root",
            "code": "INVALID_REQUEST",
            "message": "questions[0].id must be a string",
        },
    ]


async def test_a_call_that_needs_approval_asks_only_once_approved() -> None:
    """The SDK's approval flow (``needs_approval``): the run stops with the call as an
    interruption and nobody is asked; approved, the resumed run asks with the call id as key;
    rejected, nobody is asked and the model reads the SDK's rejection."""
    for approve in (True, False):
        ctx = uq.Context()
        provider = Recording()
        ctx.user_questions.register_provider(provider)
        tool = dataclasses.replace(
            ask_user_question_tool(ctx, key_from_call_id=True), needs_approval=True
        )
        model = FakeModel(json.dumps(ARGS))
        agent = SdkAgent(name="assistant", model=model, tools=[tool])
        result = await Runner.run(agent, "Set up the project.", run_config=NO_TRACING)
        (interruption,) = result.interruptions
        assert provider.requests == []
        state = result.to_state()
        if approve:
            state.approve(interruption)
        else:
            state.reject(interruption)
        result = await Runner.run(agent, state, run_config=NO_TRACING)
        assert result.final_output == "done"
        if approve:
            (request,) = provider.requests
            assert request["key"] == "call_1"
            assert tool_output(model)["value"]["answers"][0]["custom"] == "later"
        else:
            assert provider.requests == []
            items: List[Any] = model.inputs[1]
            (output,) = [
                i for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"
            ]
            assert output["output"] == "Tool execution was not approved."


async def test_a_cancelled_streamed_run_withdraws_the_ask() -> None:
    """``Runner.run_streamed`` cancelled (``result.cancel()``) while the person is asked: the
    ask is withdrawn, the stream ends."""
    ctx = uq.Context()
    inbox = uq.QuestionInbox()
    ctx.user_questions.register_provider(inbox)
    model = FakeModel(json.dumps(ARGS))
    agent = SdkAgent(name="assistant", model=model, tools=[ask_user_question_tool(ctx)])
    result = Runner.run_streamed(agent, "Set up the project.", run_config=NO_TRACING)
    events = settled_by(inbox, lambda ticket: result.cancel())
    kinds = [event.type async for event in result.stream_events()]
    assert "run_item_stream_event" in kinds
    while len(events) < 2:
        await asyncio.sleep(0.01)
    assert [(e["type"], e.get("outcome")) for e in events] == [
        ("requested", None),
        ("resolved", "aborted"),
    ]
    assert inbox.pending() == []
    assert len(model.inputs) == 1


async def test_the_tool_takes_a_context_or_its_user_questions_and_nothing_else() -> None:
    """As in Node: a context or its ``user_questions``; anything else is ``INVALID_ARGUMENT``
    at once (it was an ``AttributeError``)."""
    ctx = uq.Context()
    ctx.user_questions.register_provider(uq.AutoResponder("first"))
    for target in (ctx, ctx.user_questions):
        model = await run(ask_user_question_tool(target), json.dumps(ARGS))
        assert tool_output(model)["isError"] is False
    for wrong in (object(), None, ctx.agents):
        with pytest.raises(uq.UserQuestionError) as caught:
            ask_user_question_tool(wrong)  # type: ignore[arg-type]
        assert (caught.value.code, caught.value.message) == (
            "INVALID_ARGUMENT",
            "ask_user_question_tool needs a Context or its user_questions",
        )
