"""Request rewrites the retry loop applies before trying again."""

from __future__ import annotations

from typing import Any

_THINKING_BLOCKS = frozenset({"thinking", "redacted_thinking"})
_REASONING_KEYS = ("reasoning", "reasoning_details", "reasoning_content")


def strip_reasoning(messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], bool]:
    """The history without reasoning the provider could reject (level 3).

    Removes reasoning text fields from assistant messages, thinking blocks
    (with their signatures) from ``anthropic_content`` and reasoning items from
    ``responses_items``. Returns the new history and whether anything was removed;
    the input is not modified.
    """
    changed = False
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.get("role") != "assistant":
            out.append(message)
            continue
        clean = {k: v for k, v in message.items() if k not in _REASONING_KEYS}
        blocks = message.get("anthropic_content")
        if isinstance(blocks, list):
            clean["anthropic_content"] = [
                b for b in blocks if not (isinstance(b, dict) and b.get("type") in _THINKING_BLOCKS)
            ]
        items = message.get("responses_items")
        if isinstance(items, list):
            clean["responses_items"] = [i for i in items if not (isinstance(i, dict) and i.get("type") == "reasoning")]
        changed = changed or clean != message
        out.append(clean)
    return out, changed
