"""MCP form-mode elicitation (§21): a question batch as ``elicitation/create`` and back.

``to_elicitation(questions)`` → ``{"message", "requestedSchema"}``: one field per question,
named by its id (single-select: a string with ``oneOf``; multi-select: an array of
``anyOf``; no options: a string; a typed ``input``, §24: the primitive schema of its kind), a
sibling optional string ``<id>.other`` for every question with options, nothing required (a
skip). A ``secret`` or ``file`` input is refused (``INVALID_REQUEST`` naming the question):
form mode carries neither. ``from_elicitation(questions, result)`` maps the client's result
back: ``accept`` → the answer (a typed field's value as the item's ``value``; checked by §6,
a mismatch is ``PROVIDER_FAILED`` naming the field), ``decline`` / ``cancel`` →
``ASK_CANCELLED``.

:class:`McpElicitationProvider` is a provider for a host that is an MCP server: each ask goes
to the connected client as a form elicitation (the ``mcp`` package, ``pip install
user-questions[mcp]``).
"""

from __future__ import annotations

import asyncio
from typing import Any, Dict, List, Mapping, Optional

from .. import _native
from .._errors import UserQuestionError
from ._check import refuse, well_formed

__all__ = [
    "CANCELLED",
    "CLIENT_GONE",
    "NO_BACK_CHANNEL",
    "NO_ELICITATION",
    "McpElicitationProvider",
    "from_elicitation",
    "supports_form_elicitation",
    "to_elicitation",
]

#: The message of ``ASK_CANCELLED`` when the client declines or cancels (as for an inbox, §7).
CANCELLED = "the user cancelled ask_user_question"
#: The message of the ``PROVIDER_FAILED`` raised when the client cannot elicit.
NO_ELICITATION = (
    "the connected MCP client cannot answer questions: "
    "it did not declare the elicitation capability for form mode"
)
#: The message of the ``PROVIDER_FAILED`` raised when the connection cannot reach the client.
NO_BACK_CHANNEL = (
    "this MCP connection cannot send requests to the client (no back-channel, e.g. a "
    "stateless 2026-07-28 request); the client cannot be asked"
)
#: The message of the ``PROVIDER_FAILED`` raised when the connection to the client closes (the
#: client went away, or the server closed it) before the client answered, or before the ask.
CLIENT_GONE = "the connection to the MCP client closed before the user answered"


def _title(question: Mapping[str, Any]) -> str:
    header = question.get("header")
    return header if isinstance(header, str) and header else question["question"]


#: The primitive schema of each kind of input form mode carries (§24): ``type``, ``format``.
_PRIMITIVES: Dict[str, Dict[str, str]] = {
    "text": {"type": "string"},
    "number": {"type": "number"},
    "integer": {"type": "integer"},
    "boolean": {"type": "boolean"},
    "date": {"type": "string", "format": "date"},
    "datetime": {"type": "string", "format": "date-time"},
    "email": {"type": "string", "format": "email"},
    "url": {"type": "string", "format": "uri"},
}
#: The constraints of an input that a primitive schema carries under the same name.
_CARRIED = ("minLength", "maxLength", "minimum", "maximum", "default")
#: Why form mode cannot carry these kinds (the refusal names the question).
_REFUSED = {
    "secret": "MCP sends sensitive data through URL mode only",
    "file": "its fields are strings, numbers and booleans",
}
#: The words of the bounds a date's string schema cannot carry, as the core's reasons say them.
_BOUND_WORDS = {
    "date": ("on or after", "on or before"),
    "datetime": ("at or after", "at or before"),
}


def _input_lines(spec: Mapping[str, Any]) -> List[str]:
    """What a field's schema cannot say of its input, for its description: the bounds of a
    date or date-time, and that a URL is http or https (``format: uri`` admits any scheme)."""
    kind = spec["kind"]
    if kind == "url":
        return ["An absolute http or https URL."]
    words = _BOUND_WORDS.get(kind)
    if words is None:
        return []
    bounds = [f"{w} {spec[k]}" for w, k in zip(words, ("minimum", "maximum")) if k in spec]
    if not bounds:
        return []
    text = " and ".join(bounds)
    return [f"{text[0].upper()}{text[1:]}."]


def _description(question: Mapping[str, Any]) -> str:
    lines = [question["question"]]
    if "detail" in question:
        lines.append(question["detail"])
    options = question.get("options") or []
    for option in options:
        if "description" in option:
            lines.append(f"{option['label']} — {option['description']}")
    for option in options:
        if "preview" in option:
            lines.append(f"Preview of {option['label']}:\n{option['preview']}")
    if "input" in question:
        lines.extend(_input_lines(question["input"]))
    return "\n".join(lines)


def _form_mode_carries(questions: List[Mapping[str, Any]]) -> None:
    """Refuses, naming the first such question, a batch with an input form mode cannot carry
    (§24: a secret or a file): ``INVALID_REQUEST``, both ways."""
    for question in questions:
        kind = (question.get("input") or {}).get("kind")
        if kind in _REFUSED:
            refuse(
                f"question {question['id']} asks for a {kind}, which MCP form elicitation "
                f"cannot carry: {_REFUSED[kind]}"
            )


def _typed_field(question: Mapping[str, Any], title: str, description: str) -> Dict[str, Any]:
    """The primitive schema of a question with ``input`` (§24) of a kind form mode carries."""
    spec = question["input"]
    kind = spec["kind"]
    primitive = _PRIMITIVES[kind]
    field: Dict[str, Any] = {"type": primitive["type"], "title": title, "description": description}
    if "format" in primitive:
        field["format"] = primitive["format"]
    for key in _CARRIED:
        # A date's bounds are ISO strings, which a string schema has no place for: they are in
        # the description (and the answer is checked against them, §6).
        if key in spec and not (key in ("minimum", "maximum") and kind in _BOUND_WORDS):
            field[key] = spec[key]
    return field


def to_elicitation(questions: List[Mapping[str, Any]]) -> Dict[str, Any]:
    """The ``elicitation/create`` form parameters ``{"message", "requestedSchema"}`` for a
    question batch (one that is not well-formed is ``INVALID_REQUEST`` naming the path, §3;
    a secret or file input, ``INVALID_REQUEST`` naming the question, §24)."""
    well_formed(questions)
    _form_mode_carries(questions)
    properties: Dict[str, Any] = {}

    def put(key: str, field: Dict[str, Any], question_id: str) -> None:
        if key in properties:
            refuse(
                f"question id {_json(question_id)} gives the elicitation field {_json(key)}, "
                "which another question already uses"
            )
        properties[key] = field

    for question in questions:
        title = _title(question)
        description = _description(question)
        options = question.get("options") or []
        qid = question["id"]
        if "input" in question:
            put(qid, _typed_field(question, title, description), qid)
            continue
        if not options:
            put(qid, {"type": "string", "title": title, "description": description}, qid)
            continue
        choices = [{"const": o["label"], "title": o["label"]} for o in options]
        multi = bool(question.get("multiSelect"))
        field: Dict[str, Any]
        if multi:
            field = {
                "type": "array",
                "title": title,
                "description": description,
                "items": {"anyOf": choices},
            }
        else:
            field = {"type": "string", "title": title, "description": description, "oneOf": choices}
        put(qid, field, qid)
        # Every field's title and description are its question's (§21), the Other one's too.
        put(f"{qid}.other", {"type": "string", "title": title, "description": description}, qid)
    return {
        "message": "\n".join(q["question"] for q in questions),
        "requestedSchema": {"type": "object", "properties": properties},
    }


def _json(value: str) -> str:
    import json

    return json.dumps(value, ensure_ascii=False)


def _failed(message: str) -> UserQuestionError:
    return UserQuestionError(message, "PROVIDER_FAILED")


def _text(content: Mapping[str, Any], key: str) -> Optional[str]:
    value = content.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise _failed(f"elicitation field {_json(key)} must be a string")
    return value


def _blank(kind: str, value: Any) -> bool:
    """Whether a typed field's value is an empty entry, a skip: no character for text (where
    white space may be the value), nothing but white space for the other string kinds."""
    if not isinstance(value, str):
        return False
    return value == "" if kind == "text" else not value.strip()


def from_elicitation(questions: List[Mapping[str, Any]], result: Any) -> Dict[str, Any]:
    """The client's ``ElicitResult`` (``{"action", "content"?}``) → our answer, or
    ``ASK_CANCELLED`` (decline, cancel) or ``PROVIDER_FAILED`` naming what does not fit.
    Questions that :func:`to_elicitation` refuses are refused here too, before the result."""
    well_formed(questions)
    _form_mode_carries(questions)
    if not isinstance(result, Mapping):
        raise _failed("the elicitation result must be an object")
    action = result.get("action")
    if action in ("decline", "cancel"):
        raise UserQuestionError(CANCELLED, "ASK_CANCELLED")
    if action is None:
        raise _failed("the elicitation result has no action")
    if not isinstance(action, str):
        raise _failed("the elicitation result's action must be a string")
    if action != "accept":
        raise _failed(f"the elicitation result has an unknown action {_json(action)}")
    content = result.get("content")
    if content is None:
        content = {}
    if not isinstance(content, Mapping):
        raise _failed("the elicitation content must be an object")
    items: List[Dict[str, Any]] = []
    for question in questions:
        qid = question["id"]
        options = question.get("options") or []
        labels = [o["label"] for o in options]
        item: Dict[str, Any] = {"id": qid, "selected": []}
        if "input" in question:
            value = content.get(qid)
            if value is not None and not _blank(question["input"]["kind"], value):
                item["value"] = value  # its type and constraints are checked by §6 below
            items.append(item)
            continue
        if not options:
            text = _text(content, qid)
            if text is not None and text.strip():
                item["custom"] = text
            items.append(item)
            continue
        value = content.get(qid)
        if question.get("multiSelect"):
            if value is not None:
                if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                    raise _failed(f"elicitation field {_json(qid)} must be an array of strings")
                for label in value:
                    if label not in labels:
                        raise _failed(
                            f"elicitation field {_json(qid)} selects {_json(label)}, "
                            "which is not one of its options"
                        )
                    if label in item["selected"]:
                        raise _failed(
                            f"elicitation field {_json(qid)} selects {_json(label)} twice"
                        )
                    item["selected"].append(label)
        elif value is not None:
            if not isinstance(value, str):
                raise _failed(f"elicitation field {_json(qid)} must be a string")
            if value in labels:
                item["selected"] = [value]
            elif value != "":
                raise _failed(
                    f"elicitation field {_json(qid)} selects {_json(value)}, "
                    "which is not one of its options"
                )
        other = _text(content, f"{qid}.other")
        if other is not None and other.strip():
            item["custom"] = other
            if not question.get("multiSelect"):
                item["selected"] = []  # single-select: free text overrides the choice (§2)
        items.append(item)
    answer = {"answers": items}
    try:
        _native.validate_answer(list(questions), answer)
    except UserQuestionError as err:
        raise _failed(f"the elicitation answer does not fit its questions: {err.message}") from None
    return answer


def supports_form_elicitation(capabilities: Any) -> bool:
    """Whether a client's declared capabilities (an ``mcp.types.ClientCapabilities``, a dict,
    or ``None``) include form-mode elicitation. An empty ``elicitation`` object means form
    mode (the protocol's backwards-compatible default)."""
    if capabilities is None:
        return False
    if isinstance(capabilities, Mapping):
        elicitation = capabilities.get("elicitation")
        if not isinstance(elicitation, Mapping):
            return False
        return elicitation.get("form") is not None or elicitation.get("url") is None
    elicitation = getattr(capabilities, "elicitation", None)
    if elicitation is None:
        return False
    return (
        getattr(elicitation, "form", None) is not None or getattr(elicitation, "url", None) is None
    )


def _is_session(value: Any) -> bool:
    """Whether ``value`` can elicit: what a ``ServerSession`` offers the provider."""
    return callable(getattr(value, "elicit_form", None)) and hasattr(value, "client_capabilities")


class McpElicitationProvider:
    """A provider that asks the client of an MCP server through form-mode elicitation.

    ``session`` is the server's ``mcp.server.session.ServerSession`` (in a tool handler:
    ``ctx.session``), or the tool's ``Context`` itself (its session is used); anything else is
    ``INVALID_ARGUMENT`` here, not a failure of every ask. Each ask sends one ``elicitation/create`` request and settles from the
    client's result. Without ``related_request_id`` it goes on the connection's own channel, so
    the provider may outlive the request it was made in; with it (``ctx.request_id``) it is
    tied to that request, which Streamable HTTP needs to route it on the request's stream; a withdrawn ask cancels the request (the client receives
    ``notifications/cancelled``). A client that did not declare form elicitation fails each
    ask at once with ``PROVIDER_FAILED`` (:data:`NO_ELICITATION`): capabilities are known only
    once a client has connected, after the provider is registered. A question form mode cannot
    carry (a secret or file input) fails the ask with ``INVALID_REQUEST`` naming it, and the
    client is not asked. A connection that closes
    before the client answered (or before the ask) fails the ask with ``PROVIDER_FAILED``
    (:data:`CLIENT_GONE`), unless the ask is awaited by the tool call, which the SDK cancels
    as the connection ends: that ask is withdrawn (``ASK_ABORTED``; the awaiting task gets
    ``CancelledError``).
    """

    def __init__(self, session: Any, *, related_request_id: Any = None) -> None:
        if not _is_session(session):
            try:
                inner = session.session  # a tool's Context
            except Exception:  # noqa: BLE001 - not a Context, or one outside its request
                inner = None
            if not _is_session(inner):
                raise UserQuestionError(
                    "McpElicitationProvider needs an MCP ServerSession (in a tool: ctx.session) "
                    f"or a tool's Context, not {type(session).__name__}",
                    "INVALID_ARGUMENT",
                )
            session = inner
        self._session = session
        self._related_request_id = related_request_id

    async def ask(self, request: Mapping[str, Any]) -> Dict[str, Any]:
        questions = list(request["questions"])
        if not supports_form_elicitation(self._session.client_capabilities):
            raise _failed(NO_ELICITATION)
        params = to_elicitation(questions)
        from mcp.shared.exceptions import MCPError, NoBackChannelError
        from mcp_types import CONNECTION_CLOSED

        try:
            result = await self._session.elicit_form(
                params["message"],
                params["requestedSchema"],
                related_request_id=self._related_request_id,
            )
        except NoBackChannelError:
            raise _failed(NO_BACK_CHANNEL) from None
        except MCPError as err:
            if err.code != CONNECTION_CLOSED:
                raise _failed(f"the MCP client failed the elicitation: {err}") from None
            # The connection closed. The SDK fails the requests it waits on and cancels the
            # tool calls in flight in one step, the requests first: an asker that is one of
            # those calls has withdrawn its ask (ASK_ABORTED, §4.1), as in Node, whose SDK
            # aborts the calls' signals first. One turn of the loop lets that withdrawal,
            # already requested, land before this failure (which it then drops).
            await asyncio.sleep(0)
            raise _failed(CLIENT_GONE) from None
        return from_elicitation(
            questions, result.model_dump(mode="json", by_alias=True, exclude_none=True)
        )
