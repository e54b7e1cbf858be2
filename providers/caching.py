"""Anthropic prompt caching, strategy ``system_and_3``.

Four breakpoints at one TTL: the system prompt and the last three non-system
messages. A marker goes on a content part (the last one that may carry it),
never on the message envelope; a string content becomes a one-part list.
Works on already-converted Anthropic request data and never mutates its input.
"""

from __future__ import annotations

import copy
from typing import Any

# Anthropic rejects cache_control on these parts.
_UNMARKABLE = frozenset({"thinking", "redacted_thinking"})


def cache_marker(ttl: str) -> dict[str, str]:
    """The ``cache_control`` value for a TTL of ``5m`` (default) or ``1h``."""
    marker = {"type": "ephemeral"}
    if ttl == "1h":
        marker["ttl"] = "1h"
    return marker


def apply_system_and_3(
    system: list[dict[str, Any]] | None, messages: list[dict[str, Any]], ttl: str = "5m"
) -> tuple[list[dict[str, Any]] | None, list[dict[str, Any]]]:
    """Copies of ``system`` blocks and ``messages`` with the four cache breakpoints set."""
    marker = cache_marker(ttl)
    system = copy.deepcopy(system)
    # Only the last three messages change: copy those, share the rest.
    messages = messages[:-3] + copy.deepcopy(messages[-3:])
    if system:
        _mark_parts(system, marker)
    for msg in messages[-3:]:
        content = msg.get("content")
        if isinstance(content, str):
            msg["content"] = [{"type": "text", "text": content, "cache_control": dict(marker)}]
        elif isinstance(content, list):
            _mark_parts(content, marker)
    return system, messages


def _mark_parts(parts: list[dict[str, Any]], marker: dict[str, str]) -> None:
    for part in reversed(parts):
        if part.get("type") not in _UNMARKABLE:
            part["cache_control"] = dict(marker)
            return
