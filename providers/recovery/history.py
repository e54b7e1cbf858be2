"""Request rewrites the retry loop applies before trying again."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from messages.chat import AssistantMessage, ChatMessage

_THINKING_BLOCKS = frozenset({"thinking", "redacted_thinking"})
_REASONING_EXTRAS = ("reasoning_details", "reasoning_content")


def strip_reasoning(messages: Sequence[ChatMessage]) -> tuple[list[ChatMessage], bool]:
    """The history without reasoning the provider could reject (level 3).

    Removes reasoning text from assistant messages, thinking blocks (with their signatures) from
    ``anthropic_content`` and reasoning items from ``responses_items``. Returns the new history and
    whether anything was removed; the messages given are not changed.
    """
    changed = False
    out: list[ChatMessage] = []
    for message in messages:
        if not isinstance(message, AssistantMessage):
            out.append(message)
            continue
        extras: dict[str, Any] = {k: v for k, v in message.extras.items() if k not in _REASONING_EXTRAS}
        blocks = extras.get("anthropic_content")
        if isinstance(blocks, list):
            extras["anthropic_content"] = [b for b in blocks if not (isinstance(b, dict) and b.get("type") in _THINKING_BLOCKS)]
        items = extras.get("responses_items")
        if isinstance(items, list):
            extras["responses_items"] = [i for i in items if not (isinstance(i, dict) and i.get("type") == "reasoning")]
        clean = attrs.evolve(message, reasoning=None, extras=extras)
        changed = changed or clean != message
        out.append(clean)
    return out, changed
