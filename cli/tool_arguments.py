"""A tool call's arguments as a person reads them: the argument that says what the call does, then the rest.

Events carry the arguments as a one-line JSON preview, cut at a fixed length
(``actors.session.workers.preview``), so the JSON may be unfinished: the
values are read from it as far as it goes. ``terminal {"command": "ls",
"timeout": 60}`` reads ``ls  timeout=60``; a call whose arguments are not an
object is shown as it came.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["arguments_text"]

#: The argument that says what a call of each tool does (others: the first of _USUAL_KEYS it has).
_MAIN_KEY = {
    "terminal": "command", "execute_code": "code", "process": "action", "read_file": "path", "write_file": "path",
    "patch": "path", "search_files": "pattern", "web_search": "query", "web_extract": "urls",
    "browser_navigate": "url", "delegate_task": "goal", "clarify": "question", "vision_analyze": "question",
    "image_generate": "prompt", "text_to_speech": "text", "skill_view": "name", "skill_manage": "name",
    "cronjob": "action", "memory": "action", "session_search": "query",
}
_USUAL_KEYS = ("command", "path", "query", "url", "urls", "name", "pattern", "goal", "prompt", "question", "text", "action")
#: What ``preview`` ends a cut text with.
_CUT = "…"
_CLOSERS = {"{": "}", "[": "]"}


def arguments_text(name: str, arguments: str, width: int) -> str:
    """``arguments`` (a JSON preview, maybe cut) of a call of tool ``name`` in at most ``width`` characters."""
    fields = _fields(arguments)
    if fields is None:
        return _fit(" ".join(arguments.split()), width)
    key = _MAIN_KEY.get(name) or next((k for k in _USUAL_KEYS if k in fields), None)
    if name == "delegate_task" and "goal" not in fields and "tasks" in fields:
        key = "tasks"
    main = _value_text(fields.pop(key)) if key in fields else ""
    if name == "execute_code" and "\n" in main.strip():
        # A script reads by its first line (its calls are shown as lines of their own).
        main = next(line for line in main.splitlines() if line.strip()).strip() + " …"
    parts = [main] if main else []
    parts += [f"{k}={_value_text(v)}" for k, v in fields.items()]
    return _fit("  ".join(" ".join(part.split()) for part in parts), width)


def _fields(arguments: str) -> dict[str, Any] | None:
    """The arguments' top-level fields (None when they are not a JSON object)."""
    for candidate in (arguments, *_completions(arguments.removesuffix(_CUT))):
        try:
            data = json.loads(candidate)
        except ValueError:
            continue
        return data if isinstance(data, dict) else None
    return None


def _completions(text: str) -> list[str]:
    """``text``, a JSON object cut short, made whole two ways: the open string ended (marked cut) and the
    brackets closed; or, when the cut fell in a key or before a value, everything from its last whole field on dropped."""
    stack: list[str] = []
    in_string = escaped = False
    last_field_end = 0
    for index, char in enumerate(text):
        if escaped:
            escaped = False
        elif in_string:
            escaped = char == "\\"
            in_string = char != '"'
        elif char == '"':
            in_string = True
        elif char in _CLOSERS:
            stack.append(_CLOSERS[char])
        elif char in "}]" and stack:
            stack.pop()
        elif char == "," and len(stack) == 1:
            last_field_end = index
    if not text.startswith("{"):
        return []
    ended = (text[:-1] if escaped else text) + _CUT + '"' if in_string else text
    return [ended + "".join(reversed(stack)), text[:last_field_end] + "}"]


def _value_text(value: Any) -> str:
    """A value in words: a string as it is, a list's items (a task's goal) joined, anything else as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return " | ".join(_value_text(item.get("goal", item) if isinstance(item, dict) else item) for item in value)
    return json.dumps(value, ensure_ascii=False)


def _fit(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, the cut marked."""
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"
