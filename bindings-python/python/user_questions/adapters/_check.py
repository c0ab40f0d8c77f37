"""Small shape checks the converters share: every refusal is ``INVALID_REQUEST`` naming the
path, like the core's own well-formedness messages (§3)."""

from __future__ import annotations

from typing import Any, Dict, List, NoReturn, Optional

from .. import _native
from .._errors import UserQuestionError

__all__ = [
    "refuse",
    "obj",
    "string",
    "opt_string",
    "opt_bool",
    "array",
    "label_lines",
    "well_formed",
]


def refuse(message: str) -> NoReturn:
    raise UserQuestionError(message, "INVALID_REQUEST")


def obj(value: Any, path: str) -> Dict[str, Any]:
    if not isinstance(value, dict):
        refuse(f"{path} must be an object")
    return value


def string(value: Any, path: str) -> str:
    if not isinstance(value, str):
        refuse(f"{path} must be a string")
    return value


def opt_string(parent: Dict[str, Any], key: str, path: str) -> Optional[str]:
    if key not in parent or parent[key] is None:
        return None
    return string(parent[key], f"{path}.{key}")


def opt_bool(parent: Dict[str, Any], key: str, path: str) -> bool:
    value = parent.get(key)
    if value is None:
        return False
    if not isinstance(value, bool):
        refuse(f"{path}.{key} must be a boolean")
    return value


def array(value: Any, path: str) -> List[Any]:
    if not isinstance(value, list):
        refuse(f"{path} must be an array")
    return value


def label_lines(options: List[Dict[str, Any]]) -> List[str]:
    """``label — description`` for every option that has a description."""
    return [f"{o['label']} — {o['description']}" for o in options if "description" in o]


def well_formed(questions: Any) -> None:
    """Refuses a question batch that is not well-formed with the core's own message
    (``INVALID_REQUEST`` naming the path, §3), as the core reads an ask's questions."""
    try:
        # Against an empty answer: what the questions are is checked first, then the answer,
        # whose mismatch (``BAD_ANSWER``) says nothing about them.
        _native.validate_answer(questions, {"answers": []})
    except UserQuestionError as error:
        if error.code == "INVALID_REQUEST":
            raise
