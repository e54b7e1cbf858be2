"""What a hook is given and what its answer means, in Hermes's shapes.

A command hook reads one JSON object on stdin: ``hook_event_name``, ``tool_name``, ``tool_input`` (the
call's arguments), ``session_id``, ``cwd`` and ``extra`` (every other field of the event). A Python hook is
called with the event's fields as keyword arguments, as Hermes calls a plugin's hook.

A ``pre_tool_call`` hook blocks its call by answering ``{"action": "block", "message": ...}`` or the
Claude-Code form ``{"decision": "block", "reason": ...}``; any other answer lets the call run. A
``pre_llm_call`` hook may answer ``{"context": ...}`` (a Python one a plain string too): text added to the
turn's user message as the model gets it. Other events' answers are ignored.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["DEFAULT_BLOCK_MESSAGE", "HookAnswerError", "block_message", "command_input", "context_of", "parse_output"]

#: A block directive with no usable message gets this one.
DEFAULT_BLOCK_MESSAGE = "Blocked by a hook."
_TOP_LEVEL = frozenset({"tool_name", "args", "session_id"})


class HookAnswerError(ValueError):
    """A command hook printed something that is not a JSON object."""


def command_input(event: str, fields: Mapping[str, Any], cwd: str) -> bytes:
    """The JSON a command hook reads on stdin for ``event`` with these fields."""
    args = fields.get("args")
    payload = {
        "hook_event_name": event,
        "tool_name": fields.get("tool_name"),
        "tool_input": args if isinstance(args, Mapping) else None,
        "session_id": fields.get("session_id") or "",
        "cwd": cwd,
        "extra": {key: value for key, value in fields.items() if key not in _TOP_LEVEL},
    }
    return json.dumps(payload, ensure_ascii=False, default=str).encode()


def parse_output(stdout: bytes) -> Mapping[str, Any] | None:
    """A command hook's answer: the JSON object it printed; None when it printed nothing.

    Raises:
        HookAnswerError: it printed something else.
    """
    text = stdout.decode("utf-8", errors="replace").strip()
    if not text:
        return None
    try:
        answer = json.loads(text)
    except json.JSONDecodeError as exc:
        raise HookAnswerError(f"its output is not JSON ({exc.msg}): {text[:200]!r}") from None
    if not isinstance(answer, dict):
        raise HookAnswerError(f"its output is JSON but not an object: {text[:200]!r}")
    return answer


def block_message(answer: Any) -> str | None:
    """The reason a ``pre_tool_call`` answer blocks its call with; None when it does not block."""
    if not isinstance(answer, Mapping):
        return None
    if answer.get("action") == "block":
        candidates = (answer.get("message"), answer.get("reason"))
    elif answer.get("decision") == "block":
        candidates = (answer.get("reason"), answer.get("message"))
    else:
        return None
    for candidate in candidates:
        if isinstance(candidate, str) and candidate.strip():
            return candidate.strip()
    return DEFAULT_BLOCK_MESSAGE


def context_of(answer: Any) -> str | None:
    """The text a ``pre_llm_call`` answer adds to the turn's message; None when it adds none."""
    text = answer.get("context") if isinstance(answer, Mapping) else answer
    return text if isinstance(text, str) and text.strip() else None
