"""Codex's ``request_user_input`` tool (and the app server's ``item/tool/requestUserInput``).

``to_request(input)`` turns ``{"questions": [{"id", "header", "question", "options"}]}`` into a
request, keeping the ids; ``to_result(input, answer)`` turns our answer into Codex's response
``{"answers": {id: {"answers": [label, "user_note: <text>"]}}}``: the chosen label, then free
text as a ``user_note``, an empty list for a skipped question. ``isSecret: true`` is a question
with a ``secret`` input (§24), whose value comes back as its ``user_note``. What does not fit
(more than 3 questions, a multi-select question, a secret question with options) is refused
with ``INVALID_REQUEST`` naming it.
"""

from __future__ import annotations

from typing import Any, Dict, List

from .. import _native
from ._check import array, obj, opt_bool, opt_string, refuse, string

__all__ = ["NOTE_PREFIX", "to_request", "to_result"]

#: How Codex's own UI sends free text next to (or instead of) a chosen option.
NOTE_PREFIX = "user_note: "


def to_request(input: Any) -> Dict[str, Any]:
    """``request_user_input`` arguments → ``{"questions": [...]}`` (ids kept)."""
    tool_input = obj(input, "request_user_input input")
    questions = array(tool_input.get("questions"), "questions")
    if not 1 <= len(questions) <= 3:
        refuse(f"request_user_input takes 1 to 3 questions, got {len(questions)}")
    items: List[Dict[str, Any]] = []
    for i, raw in enumerate(questions):
        path = f"questions[{i}]"
        q = obj(raw, path)
        item: Dict[str, Any] = {
            "id": string(q.get("id"), f"{path}.id"),
            "question": string(q.get("question"), f"{path}.question"),
        }
        header = opt_string(q, "header", path)
        if header is not None:
            item["header"] = header
        if opt_bool(q, "multiSelect", path):
            refuse(f"{path}.multiSelect cannot be carried: request_user_input has no multi-select")
        secret = opt_bool(q, "isSecret", path)
        opt_bool(q, "isOther", path)
        if q.get("options") is not None:
            options = []
            for j, raw_option in enumerate(array(q["options"], f"{path}.options")):
                opath = f"{path}.options[{j}]"
                o = obj(raw_option, opath)
                option: Dict[str, Any] = {"label": string(o.get("label"), f"{opath}.label")}
                description = opt_string(o, "description", opath)
                if description is not None:
                    option["description"] = description
                options.append(option)
            if options:
                item["options"] = options
        if secret:
            if "options" in item:
                refuse(
                    f"{path}.isSecret cannot be carried with options: a secret is typed, not chosen"
                )
            item["input"] = {"kind": "secret"}
        items.append(item)
    return {"questions": items}


def to_result(input: Any, answer: Any) -> Dict[str, Any]:
    """Our answer to the questions of ``input`` → ``{"answers": {id: {"answers": [...]}}}``,
    checked by §6 first (``BAD_ANSWER``)."""
    request = to_request(input)
    _native.validate_answer(request["questions"], answer)
    answers: Dict[str, Any] = {}
    for item in answer["answers"]:
        values = list(item["selected"])
        if "custom" in item:
            values.append(NOTE_PREFIX + item["custom"])
        if "value" in item:  # a secret's (the only input a converted request has)
            values.append(NOTE_PREFIX + item["value"])
        answers[item["id"]] = {"answers": values}
    return {"answers": answers}
