"""Claude Code's ``AskUserQuestion`` tool and the Claude Agent SDK's ``can_use_tool``.

``to_request(input)`` turns the tool's input into a request (questions ``q1``, ``q2``, … in
order); ``to_result(input, answer)`` turns our answer into what the tool returns:
``{"questions": …, "answers": {question text: answer}}``, multi-select labels joined by
``", "``, free text as the answer, a skipped question left out. An option's ``preview`` is
carried both ways (§24: the option's ``preview``; the result gives back the input's own
questions). What does not fit (more than 4 questions, fewer than 2 or more than 4 options, a
header over 12 characters, two questions with the same text) is refused with
``INVALID_REQUEST`` naming it.

``can_use_tool(service)`` is a ``can_use_tool`` callback for ``ClaudeAgentOptions``: it asks
``AskUserQuestion`` through the seam and sends ``ExitPlanMode`` to ``review_plan`` (§17).
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable, Dict, List, Optional

from .. import _native
from .._errors import UserQuestionError
from ._check import array, obj, opt_bool, opt_string, refuse, string

__all__ = [
    "MAX_HEADER",
    "decide",
    "can_use_tool",
    "to_request",
    "to_result",
]

#: Claude's limit on a question's header, in characters (Unicode code points).
MAX_HEADER = 12

Decision = Dict[str, Any]
Fallback = Callable[[str, Dict[str, Any], Any], Awaitable[Any]]


def to_request(input: Any) -> Dict[str, Any]:
    """``AskUserQuestion`` tool input → ``{"questions": [...]}`` with ids ``q1``, ``q2``, …."""
    tool_input = obj(input, "AskUserQuestion input")
    questions = array(tool_input.get("questions"), "questions")
    if not 1 <= len(questions) <= 4:
        refuse(f"AskUserQuestion takes 1 to 4 questions, got {len(questions)}")
    items: List[Dict[str, Any]] = []
    seen: Dict[str, int] = {}
    for i, raw in enumerate(questions):
        path = f"questions[{i}]"
        q = obj(raw, path)
        text = string(q.get("question"), f"{path}.question")
        if text in seen:
            refuse(
                f"{path}.question repeats the text of questions[{seen[text]}]; "
                "AskUserQuestion keys answers by question text"
            )
        seen[text] = i
        item: Dict[str, Any] = {"id": f"q{i + 1}", "question": text}
        header = opt_string(q, "header", path)
        if header is not None:
            if len(header) > MAX_HEADER:
                refuse(f"{path}.header is longer than {MAX_HEADER} characters")
            item["header"] = header
        options = array(q.get("options"), f"{path}.options")
        if not 2 <= len(options) <= 4:
            refuse(
                f"{path}.options must have 2 to 4 options for AskUserQuestion, got {len(options)}"
            )
        converted = []
        for j, raw_option in enumerate(options):
            opath = f"{path}.options[{j}]"
            o = obj(raw_option, opath)
            option: Dict[str, Any] = {"label": string(o.get("label"), f"{opath}.label")}
            description = opt_string(o, "description", opath)
            if description is not None:
                option["description"] = description
            preview = opt_string(o, "preview", opath)
            if preview is not None:
                option["preview"] = preview
            converted.append(option)
        item["options"] = converted
        if opt_bool(q, "multiSelect", path):
            item["multiSelect"] = True
        items.append(item)
    return {"questions": items}


def to_result(input: Any, answer: Any) -> Dict[str, Any]:
    """Our answer to the questions of ``input`` → the tool's result
    ``{"questions": input["questions"], "answers": {question text: answer text}}``.

    The answer is checked by §6 first (``BAD_ANSWER``). Selected labels are joined by
    ``", "``; free text is the answer (after the labels of a multi-select); a skipped
    question has no entry.
    """
    request = to_request(input)
    _native.validate_answer(request["questions"], answer)
    answers: Dict[str, str] = {}
    for question, item in zip(request["questions"], answer["answers"]):
        parts = list(item["selected"])
        if "custom" in item:
            parts.append(item["custom"])
        if parts:
            answers[question["question"]] = ", ".join(parts)
    return {"questions": input["questions"], "answers": answers}


_DENIED = {
    "revise": "The user wants to keep planning before this plan is carried out.",
    "rejected": "The user rejected this plan.",
    "dismissed": "The user dismissed the plan review without approving the plan.",
}


async def decide(
    service: Any,
    tool_name: str,
    input: Dict[str, Any],
    *,
    agent: Any = None,
    signal: Any = None,
) -> Optional[Decision]:
    """The permission decision for ``AskUserQuestion`` and ``ExitPlanMode`` as the SDK's wire
    shape: ``{"behavior": "allow", "updatedInput": …}`` or ``{"behavior": "deny", "message":
    …}``; ``None`` for any other tool.

    ``AskUserQuestion``: asks ``service`` (a ``ctx.user_questions``) and allows the call with
    ``{"questions", "answers"}`` (:func:`to_result`). ``ExitPlanMode``: ``review_plan`` of
    ``input["plan"]``; approved allows the call unchanged, anything else denies it with the
    feedback (or a sentence naming the decision) as the message. A seam error (the user
    cancelled, a deadline, a refused input) denies with the error's message.
    """
    try:
        if tool_name == "AskUserQuestion":
            request: Dict[str, Any] = to_request(input)
            if agent is not None:
                request["agent"] = agent
            if signal is not None:
                request["signal"] = signal
            answer = await service.ask(request)
            result = to_result(input, answer)
            return {"behavior": "allow", "updatedInput": result}
        if tool_name == "ExitPlanMode":
            plan = input.get("plan")
            review = await service.review_plan(
                plan if isinstance(plan, str) else "", agent=agent, signal=signal
            )
            if review["decision"] == "approved":
                return {"behavior": "allow", "updatedInput": input}
            message = review.get("feedback") or _DENIED.get(
                review["decision"], "The user did not approve this plan."
            )
            return {"behavior": "deny", "message": message}
    except UserQuestionError as err:
        return {"behavior": "deny", "message": err.message}
    return None


def can_use_tool(
    service: Any, *, agent: Any = None, fallback: Optional[Fallback] = None
) -> Callable[[str, Dict[str, Any], Any], Awaitable[Any]]:
    """A ``can_use_tool`` callback for ``claude_agent_sdk.ClaudeAgentOptions``.

    Routes ``AskUserQuestion`` and ``ExitPlanMode`` through :func:`decide` and returns the
    SDK's ``PermissionResultAllow`` / ``PermissionResultDeny``. Every other tool goes to
    ``fallback(tool_name, input, context)`` when given, and is denied otherwise (this
    handler answers questions; it grants nothing else). Needs the ``claude-agent-sdk``
    package at call time.
    """

    async def handler(tool_name: str, input: Dict[str, Any], context: Any) -> Any:
        from claude_agent_sdk.types import PermissionResultAllow, PermissionResultDeny

        decision = await decide(service, tool_name, input, agent=agent)
        if decision is None:
            if fallback is not None:
                return await fallback(tool_name, input, context)
            return PermissionResultDeny(
                message=f"{tool_name} is not allowed by this host's permission handler"
            )
        if decision["behavior"] == "allow":
            return PermissionResultAllow(updated_input=decision["updatedInput"])
        return PermissionResultDeny(message=decision["message"])

    return handler
