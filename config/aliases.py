"""Deprecated ``config.yaml`` key names, moved to the Hermes Agent names that replaced them.

Hermes Agent's users bring their ``config.yaml``; where Hermes has a setting, its key is the
one this project reads. Our earlier names keep working for a while: each is moved to its new
place before the file is checked, with a warning that names the new key. When a file sets
both, the new key wins and the old one is reported as ignored.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["DEPRECATED_KEYS", "DEPRECATED_VALUES", "apply_deprecated_keys", "move_key"]

DEPRECATED_KEYS: dict[str, str] = {
    "approvals.timeout_seconds": "approvals.timeout",
    "compression.tail_ratio": "compression.target_ratio",
    "platforms.discord.allowed_users": "platforms.discord.allow_from",
    "platforms.discord.max_file_mb": "platforms.discord.max_attachment_bytes",
    "platforms.telegram.allowed_users": "platforms.telegram.allow_from",
    "retry.max_retries": "agent.api_max_retries",
    "terminal.default_timeout": "terminal.timeout",
    "tool_loop_guardrails.exact_failure_block_after": "tool_loop_guardrails.hard_stop_after.exact_failure",
    "tool_loop_guardrails.exact_failure_warn_after": "tool_loop_guardrails.warn_after.exact_failure",
    "tool_loop_guardrails.no_progress_block_after": "tool_loop_guardrails.hard_stop_after.idempotent_no_progress",
    "tool_loop_guardrails.no_progress_warn_after": "tool_loop_guardrails.warn_after.idempotent_no_progress",
    "tool_loop_guardrails.same_tool_failure_halt_after": "tool_loop_guardrails.hard_stop_after.same_tool_failure",
    "tool_loop_guardrails.same_tool_failure_warn_after": "tool_loop_guardrails.warn_after.same_tool_failure",
    "web.max_page_chars": "web.extract_char_limit",
}
"""Old dotted key -> the dotted key that replaced it (``"terminal.default_timeout": "terminal.timeout"``)."""

DEPRECATED_VALUES: dict[str, dict[str, str]] = {
    "web.backend": {"brave": "brave-free"},
}
"""Dotted key -> its old values and the Hermes values that replaced them (``brave`` is ``brave-free``)."""

_CONVERTED: dict[str, Callable[[Any], Any]] = {
    # Megabytes become Hermes's bytes; a value that is not a number is left for the section to refuse.
    "platforms.discord.max_file_mb": lambda mb: int(mb * 1024 * 1024)
    if isinstance(mb, (int, float)) and not isinstance(mb, bool) else mb,
}
"""Old dotted key -> how its value is read under the new key, where the unit changed."""


def apply_deprecated_keys(data: dict[str, Any], found: list[str]) -> dict[str, Any]:
    """``data`` with every deprecated key moved to its new name, and every deprecated value renamed; one
    warning per moved key or renamed value in ``found``.

    ``data`` is the parsed top-level mapping; it is not changed (nested mappings on a moved
    path are copied).
    """
    result = dict(data)
    for old, new in DEPRECATED_KEYS.items():
        if move_key(result, old, new, found, kind="deprecated key"):
            found.append(f"deprecated key {old}: use {new} (read as {new} this time)")
            if old in _CONVERTED:
                _put(result, new.split("."), _CONVERTED[old](_get(result, new.split("."))))
    for dotted, renamed in DEPRECATED_VALUES.items():
        path = dotted.split(".")
        value = _get(result, path) if _has(result, path) else None
        if isinstance(value, str) and value in renamed:
            _put(result, path, renamed[value])
            found.append(f"deprecated value {dotted}: {value!r}: use {renamed[value]!r} (read as {renamed[value]!r} this time)")
    return result


def move_key(data: dict[str, Any], old: str, new: str, found: list[str], *, kind: str) -> bool:
    """Move dotted ``old`` to dotted ``new`` in ``data`` (in place, copying nested mappings on the way).

    True when the value moved. When both are set the new key wins: the old one is dropped and
    reported in ``found`` as an ignored ``kind`` ("deprecated key", "Hermes key").
    """
    present, value = _pop(data, old.split("."))
    if not present:
        return False
    if _has(data, new.split(".")):
        found.append(f"{kind} {old} ignored: {new} is set too")
        return False
    _put(data, new.split("."), value)
    return True


def _pop(data: dict[str, Any], path: list[str]) -> tuple[bool, Any]:
    """Remove ``path`` from ``data``, copying each mapping on the way and dropping emptied ones.

    (True, value) when it was there, (False, None) when absent.
    """
    head, *rest = path
    if head not in data:
        return False, None
    if not rest:
        return True, data.pop(head)
    child = data[head]
    if not isinstance(child, dict):
        return False, None
    child = dict(child)
    data[head] = child
    found = _pop(child, rest)
    if not child:
        # A mapping emptied by the move was written for the old key alone: nothing is left to read.
        del data[head]
    return found


def _has(data: dict[str, Any], path: list[str]) -> bool:
    node: Any = data
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def _get(data: dict[str, Any], path: list[str]) -> Any:
    node: Any = data
    for part in path:
        node = node[part]
    return node


def _put(data: dict[str, Any], path: list[str], value: Any) -> None:
    """Set ``path`` in ``data``, creating (or copying) the mappings on the way."""
    head, *rest = path
    if not rest:
        data[head] = value
        return
    child = data.get(head)
    child = dict(child) if isinstance(child, dict) else {}
    data[head] = child
    _put(child, rest, value)
