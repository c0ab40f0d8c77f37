"""The LangGraph adapter against real graphs: a node calls the tool, the graph interrupts with
the checked questions, a checkpointer (in memory and SQLite) keeps them, a new graph object
is built before the resume, and the resume value is checked by §6."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import uuid
from typing import Any, Callable, Dict, List

import pytest
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Interrupt
from typing_extensions import TypedDict

import user_questions as uq
from user_questions.adapters.langgraph import (
    FOR_QUESTIONS,
    INTERRUPT_KIND,
    answer_interrupt,
    answer_interrupt_blocking,
    ask_user_question_tool,
    check_arguments,
    question_interrupts,
    resume_result,
)

ARGS: Dict[str, Any] = {
    "questions": [
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
            "multi_select": True,
        },
    ]
}

#: The questions as the seam accepts them (``multi_select`` → ``multiSelect``).
QUESTIONS: List[Dict[str, Any]] = [
    ARGS["questions"][0],
    {
        "id": "ci",
        "question": "Which checks should run in CI?",
        "options": [{"label": "Lint"}, {"label": "Tests"}],
        "multiSelect": True,
    },
]


class State(TypedDict, total=False):
    args: Dict[str, Any]
    result: Dict[str, Any]
    visits: int


def build(checkpointer: BaseCheckpointSaver[Any]) -> Any:
    """A one-node graph whose node calls the tool with the state's arguments."""
    tool = ask_user_question_tool()

    def ask(state: State) -> State:
        return {"result": tool.invoke(state["args"])}

    graph = StateGraph(State)
    graph.add_node("ask", ask)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", END)
    return graph.compile(checkpointer=checkpointer)


def config() -> Any:
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


def test_the_tool_has_the_definition_of_section_9() -> None:
    tool = ask_user_question_tool()
    definition = uq.AskUserQuestionTool(uq.Context()).definition
    assert tool.name == definition["name"] == "ask_user_question"
    assert tool.description == definition["description"]
    assert tool.args_schema == definition["parameters"]
    # What a chat model is sent for it.
    assert convert_to_openai_tool(tool) == {"type": "function", "function": definition}


def test_check_arguments_gives_the_accepted_questions_or_the_seams_failure() -> None:
    assert check_arguments(ARGS) == QUESTIONS
    assert check_arguments(json.dumps(ARGS)) == QUESTIONS
    assert check_arguments({"questions": []}) == {
        "isError": True,
        "error": {
            "name": "UserQuestionError",
            "code": "EMPTY_QUESTIONS",
            "message": "ask_user_question requires at least one question",
        },
        "content": [
            {"type": "text", "text": "Error: ask_user_question requires at least one question"}
        ],
    }
    duplicate = {"questions": [{"id": "a", "question": "A?"}, {"id": "a", "question": "B?"}]}
    failure = check_arguments(duplicate)
    assert isinstance(failure, dict) and failure["error"]["code"] == "INVALID_REQUEST"
    assert failure["error"]["message"] == 'question id "a" appears more than once'


def resume_through_a_new_graph(checkpointer: BaseCheckpointSaver[Any]) -> None:
    cfg = config()
    first = build(checkpointer)
    paused = first.invoke({"args": ARGS}, cfg)
    (pending,) = paused["__interrupt__"]
    assert isinstance(pending, Interrupt)
    assert pending.value == {"kind": INTERRUPT_KIND, "questions": QUESTIONS}
    assert "result" not in first.get_state(cfg).values
    del first

    restarted = build(checkpointer)  # a new graph object: only the checkpointer remains
    state = restarted.get_state(cfg)
    assert [i.value for i in question_interrupts(state.interrupts)] == [pending.value]
    answer = {
        "answers": [
            {"id": "pkg", "selected": ["npm"]},
            {"id": "ci", "selected": ["Lint", "Tests"], "custom": "e2e"},
        ]
    }
    done = restarted.invoke(Command(resume={pending.id: answer}), cfg)
    assert done["result"] == {
        "isError": False,
        "value": answer,
        "content": [
            {
                "type": "text",
                "text": '{"answers":[{"id":"pkg","selected":["npm"]},'
                '{"id":"ci","selected":["Lint","Tests"],"custom":"e2e"}]}',
            }
        ],
    }
    assert restarted.get_state(cfg).interrupts == ()


def test_an_interrupt_survives_a_new_graph_object_with_an_in_memory_checkpointer() -> None:
    resume_through_a_new_graph(InMemorySaver())


def test_an_interrupt_survives_a_new_graph_object_and_connection_with_sqlite(tmp_path: Any) -> None:
    path = tmp_path / "checkpoints.sqlite"
    cfg = config()
    with SqliteSaver.from_conn_string(str(path)) as saver:
        paused = build(saver).invoke({"args": ARGS}, cfg)
        (pending,) = paused["__interrupt__"]
    # A new connection to the same file, as after a process restart.
    conn = sqlite3.connect(str(path), check_same_thread=False)
    try:
        graph = build(SqliteSaver(conn))
        (waiting,) = graph.get_state(cfg).interrupts
        assert waiting.id == pending.id
        assert waiting.value == {"kind": INTERRUPT_KIND, "questions": QUESTIONS}
        done = graph.invoke(Command(resume=answer_for("pnpm (Recommended)")), cfg)
    finally:
        conn.close()
    assert done["result"]["isError"] is False
    assert done["result"]["value"] == answer_for("pnpm (Recommended)")


def answer_for(pkg: str, *ci: str) -> Dict[str, Any]:
    return {"answers": [{"id": "pkg", "selected": [pkg]}, {"id": "ci", "selected": list(ci)}]}


def failure(code: str, message: str) -> Dict[str, Any]:
    return {
        "isError": True,
        "error": {"name": "UserQuestionError", "code": code, "message": message},
        "content": [{"type": "text", "text": f"Error: {message}"}],
    }


def paused_graph() -> Any:
    graph, cfg = build(InMemorySaver()), config()
    (pending,) = graph.invoke({"args": ARGS}, cfg)["__interrupt__"]
    return graph, cfg, pending


def test_a_resume_value_that_does_not_fit_is_the_bad_answer_failure() -> None:
    cases = [
        (answer_for("yarn"), 'question pkg selects "yarn", which is not one of its options'),
        (
            {"answers": [{"id": "pkg", "selected": ["npm"]}]},
            "the answer has 1 items for 2 questions; it needs exactly one per question, in order",
        ),
        ("npm", "answer must be an object"),
        ({"error": {"code": "NOT_A_CODE", "message": "x"}}, "answers must be an array"),
    ]
    for value, message in cases:
        graph, cfg, pending = paused_graph()
        done = graph.invoke(Command(resume=value), cfg)
        assert done["result"] == failure("BAD_ANSWER", message), value


def test_arguments_that_fail_the_seams_checks_return_the_failure_without_interrupting() -> None:
    graph, cfg = build(InMemorySaver()), config()
    done = graph.invoke({"args": {"questions": [{"id": "a", "header": "x"}]}}, cfg)
    assert "__interrupt__" not in done
    assert done["result"] == failure("INVALID_REQUEST", "questions[0].question must be a string")


def test_answer_interrupt_asks_the_contexts_provider_and_resumes() -> None:
    graph, cfg, pending = paused_graph()
    ctx = uq.Context()
    ctx.user_questions.register_provider(uq.AutoResponder("recommended"))
    command = answer_interrupt_blocking(pending, ctx)
    (value,) = command.resume.values()
    assert list(command.resume) == [pending.id]
    assert {k: v for k, v in value.items() if k != FOR_QUESTIONS} == answer_for(
        "pnpm (Recommended)", "Lint"
    )
    done = build_again_and_resume(graph, cfg, command)
    assert done["result"]["value"] == answer_for("pnpm (Recommended)", "Lint")


def build_again_and_resume(graph: Any, cfg: Any, command: Command[Any]) -> Any:
    return build(graph.checkpointer).invoke(command, cfg)


class Recording:
    """A provider that records what it was asked and answers with ``reply``."""

    def __init__(self, reply: Callable[[Dict[str, Any]], Any]) -> None:
        self.requests: List[Dict[str, Any]] = []
        self.reply = reply

    async def ask(self, request: Any) -> Any:
        self.requests.append(request)
        return self.reply(request)


async def test_answer_interrupt_passes_the_questions_and_the_interrupt_id_as_key() -> None:
    graph, cfg, pending = paused_graph()
    ctx = uq.Context()
    provider = Recording(lambda _r: answer_for("npm"))
    ctx.user_questions.register_provider(provider)
    command = await answer_interrupt(pending, ctx.user_questions)
    (request,) = provider.requests
    assert request["questions"] == QUESTIONS
    assert request["key"] == pending.id
    done = build_again_and_resume(graph, cfg, command)
    assert done["result"]["value"] == answer_for("npm")


async def test_a_cancelled_ask_resumes_as_the_ask_cancelled_failure() -> None:
    graph, cfg, pending = paused_graph()
    ctx = uq.Context()
    inbox = uq.QuestionInbox()
    ctx.user_questions.register_provider(inbox)
    inbox.subscribe(
        lambda event: inbox.cancel(event["ticket"]) if event["type"] == "requested" else None
    )
    command = await answer_interrupt(pending.value, ctx, key="resume-1")
    assert {k: v for k, v in command.resume.items() if k != FOR_QUESTIONS} == {
        "error": {
            "name": "UserQuestionError",
            "code": "ASK_CANCELLED",
            "message": "the user cancelled ask_user_question",
        }
    }
    done = build_again_and_resume(graph, cfg, command)
    assert done["result"] == failure("ASK_CANCELLED", "the user cancelled ask_user_question")


async def test_without_a_provider_the_resume_is_the_no_provider_failure() -> None:
    graph, cfg, pending = paused_graph()
    command = await answer_interrupt(pending, uq.Context())
    done = build_again_and_resume(graph, cfg, command)
    assert done["result"] == failure("NO_PROVIDER", "no user-questions provider is registered")


async def test_the_async_graph_interrupts_and_resumes_the_same_way() -> None:
    graph, cfg = build(InMemorySaver()), config()
    paused = await graph.ainvoke({"args": ARGS}, cfg)
    (pending,) = paused["__interrupt__"]
    assert pending.value["questions"] == QUESTIONS
    ctx = uq.Context()
    ctx.user_questions.register_provider(uq.AutoResponder("first"))
    done = await build(graph.checkpointer).ainvoke(await answer_interrupt(pending, ctx), cfg)
    assert done["result"]["value"] == answer_for("pnpm (Recommended)", "Lint")


def test_answer_interrupt_refuses_an_interrupt_the_tool_did_not_raise() -> None:
    ctx = uq.Context()
    ctx.user_questions.register_provider(uq.AutoResponder("first"))
    try:
        answer_interrupt_blocking({"question": "approve?"}, ctx)
    except uq.UserQuestionError as error:
        assert error.code == "INVALID_REQUEST"
        assert error.message.startswith("the interrupt was not raised by ask_user_question")
    else:
        raise AssertionError("expected INVALID_REQUEST")


def test_the_package_imports_no_framework_until_an_adapter_module_is_imported() -> None:
    """``user_questions`` and ``user_questions.adapters`` load neither LangGraph, LangChain nor
    the OpenAI Agents SDK; ``user_questions.adapters.langgraph`` loads LangGraph only."""
    import subprocess
    import sys

    code = (
        "import sys, user_questions, user_questions.adapters\n"
        "frameworks = ('langgraph', 'langchain_core', 'agents')\n"
        "assert not [m for m in frameworks if m in sys.modules]\n"
        "import user_questions.adapters.langgraph\n"
        "assert 'langgraph' in sys.modules and 'agents' not in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_through_a_tool_node_the_model_reads_the_result_in_a_tool_message() -> None:
    """A ToolNode runs the tool from an AI message's tool call (no model needed): it interrupts,
    and on resume the ToolMessage for that call carries §9's result as JSON."""
    from langchain_core.messages import AIMessage, ToolMessage
    from langgraph.graph import MessagesState
    from langgraph.prebuilt import ToolNode

    def model(state: MessagesState) -> Dict[str, Any]:
        call = {"id": "call_1", "name": "ask_user_question", "args": ARGS}
        return {"messages": [AIMessage(content="", tool_calls=[call])]}

    def graph_over(checkpointer: BaseCheckpointSaver[Any]) -> Any:
        graph = StateGraph(MessagesState)
        graph.add_node("model", model)
        graph.add_node("tools", ToolNode([ask_user_question_tool()]))
        graph.add_edge(START, "model")
        graph.add_edge("model", "tools")
        graph.add_edge("tools", END)
        return graph.compile(checkpointer=checkpointer)

    saver, cfg = InMemorySaver(), config()
    (pending,) = graph_over(saver).invoke({"messages": []}, cfg)["__interrupt__"]
    assert pending.value == {"kind": INTERRUPT_KIND, "questions": QUESTIONS}
    ctx = uq.Context()
    ctx.user_questions.register_provider(uq.AutoResponder("first"))
    done = graph_over(saver).invoke(answer_interrupt_blocking(pending, ctx), cfg)
    message = done["messages"][-1]
    assert isinstance(message, ToolMessage) and message.tool_call_id == "call_1"
    assert isinstance(message.content, str)
    assert json.loads(message.content) == {
        "isError": False,
        "value": answer_for("pnpm (Recommended)", "Lint"),
        "content": [
            {
                "type": "text",
                "text": '{"answers":[{"id":"pkg","selected":["pnpm (Recommended)"]},'
                '{"id":"ci","selected":["Lint"]}]}',
            }
        ],
    }


def test_a_resume_value_made_for_other_questions_is_refused_not_taken() -> None:
    """LangGraph matches the resume values of one task to its interrupts by call order, which
    parallel tool calls change: a value that ``answer_interrupt`` made for other questions
    (here the same ids and labels, so §6 alone would take it) is ``BAD_ANSWER``; one made for
    these questions is taken, and the model never sees the address."""
    other = [{**QUESTIONS[0], "question": "Which package manager for the docs site?"}, QUESTIONS[1]]
    ctx = uq.Context()
    ctx.user_questions.register_provider(uq.AutoResponder("first"))
    for questions, expected in [
        (
            other,
            failure(
                "BAD_ANSWER",
                "the resume value answers another ask_user_question call's questions "
                "(LangGraph matches resume values to the interrupts of one task by call order, "
                "which parallel tool calls change: run ask_user_question calls one at a time)",
            ),
        ),
        (QUESTIONS, None),
    ]:
        graph, cfg, pending = paused_graph()
        command = answer_interrupt_blocking({"kind": INTERRUPT_KIND, "questions": questions}, ctx)
        assert FOR_QUESTIONS in command.resume
        done = graph.invoke(command, cfg)
        if expected is None:
            assert done["result"]["isError"] is False
            assert done["result"]["value"] == answer_for("pnpm (Recommended)", "Lint")
        else:
            assert done["result"] == expected


def test_an_error_resume_whose_code_is_not_a_string_is_checked_as_an_answer() -> None:
    """Only ``{"error": {"code": <a code of §10>, "message": <text>}}`` is an error resume; any
    other value under ``error`` is checked by §6 like every resume value — a code that is a
    list or an object is ``BAD_ANSWER``, never an exception out of the graph's node."""
    for code in (["ASK_CANCELLED"], {"name": "ASK_CANCELLED"}, None, 17, "OK"):
        graph, cfg, _pending = paused_graph()
        value = {"error": {"code": code, "message": "the user cancelled ask_user_question"}}
        done = graph.invoke(Command(resume=value), cfg)
        assert done["result"] == failure("BAD_ANSWER", "answers must be an array"), code
    # A known code with a message that is not text is no error resume either.
    value = {"error": {"code": "ASK_CANCELLED", "message": ["cancelled"]}}
    assert resume_result(QUESTIONS, value) == failure("BAD_ANSWER", "answers must be an array")


async def test_answer_interrupt_blocking_on_a_loop_thread_raises_and_makes_no_resume() -> None:
    """Like ``ask_blocking``, it refuses at once on a thread that runs an event loop (it would
    deadlock): the misuse raises ``EventLoopThreadError`` naming the call to make instead; it is
    not turned into an error resume that would answer the interrupt with a failure."""
    _graph, _cfg, pending = paused_graph()
    ctx = uq.Context()
    provider = Recording(lambda _r: answer_for("npm"))
    ctx.user_questions.register_provider(provider)
    for item in (pending, pending.value):
        with pytest.raises(uq.EventLoopThreadError) as info:
            answer_interrupt_blocking(item, ctx)
        assert info.value.code == "INVALID_ARGUMENT"
        assert info.value.message == (
            "answer_interrupt_blocking cannot be called from a thread that runs an event loop; "
            "await answer_interrupt() instead"
        )
    assert provider.requests == []
    # Where it belongs, on a thread without a loop, it answers.
    command = await asyncio.to_thread(answer_interrupt_blocking, pending, ctx)
    (value,) = command.resume.values()
    assert {k: v for k, v in value.items() if k != FOR_QUESTIONS} == answer_for("npm")


async def test_answer_interrupt_asks_with_the_agent_and_deadline_given_and_a_cancel_raises() -> (
    None
):
    """``agent=`` and ``timeout=`` go to the ask (§5, §16): at the deadline the resume is the
    ``ASK_TIMED_OUT`` failure, which the tool returns. Cancelling the awaiting task is no
    failed ask: it raises, and the ask is withdrawn (the inbox reports ``aborted``)."""
    graph, cfg, pending = paused_graph()
    ctx = uq.Context()
    inbox = uq.QuestionInbox()
    ctx.user_questions.register_provider(inbox)
    events: List[Any] = []
    inbox.subscribe(events.append)
    root = uq.Agent("assistant")
    ctx.agents.enter(root)

    # (wait_for: a guard against hanging, should the deadline not be passed on.)
    command = await asyncio.wait_for(answer_interrupt(pending, ctx, agent=root, timeout=0.005), 10)
    timed_out = "the user did not answer ask_user_question within 5 ms"
    (value,) = command.resume.values()
    assert value["error"] == {
        "name": "UserQuestionError",
        "code": "ASK_TIMED_OUT",
        "message": timed_out,
    }
    assert events[0]["agentId"] == "assistant" and "expiresAt" in events[0]
    assert events[1] == {"type": "resolved", "ticket": 1, "outcome": "timed_out"}
    done = build_again_and_resume(graph, cfg, command)
    assert done["result"] == failure("ASK_TIMED_OUT", timed_out)

    task = asyncio.ensure_future(answer_interrupt(pending, ctx))
    while not inbox.pending():
        await asyncio.sleep(0.001)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert events[-1] == {"type": "resolved", "ticket": 2, "outcome": "aborted"}
    assert inbox.pending() == []


def test_question_interrupts_keeps_only_the_tools_interrupts() -> None:
    _graph, _cfg, pending = paused_graph()
    other = Interrupt(value="Approve the deploy?", id="other")
    lookalike = Interrupt(value={"kind": "approval", "questions": []}, id="lookalike")
    raw_value = {"kind": INTERRUPT_KIND, "questions": QUESTIONS}  # not an Interrupt
    assert question_interrupts([other, pending, lookalike, raw_value]) == [pending]
