"""Level 1 of recovery: make a history encodable as UTF-8 before it is sent.

Lone surrogates (from a lossy terminal, a bad file read or a broken tool) make
the SDK's JSON encoding, or the provider, fail on every request until the bad
message falls out of the context. Split surrogate pairs are joined back into
the character they encode; what cannot be repaired becomes U+FFFD. ``bytes``
values are decoded as UTF-8 with replacement.
"""

from __future__ import annotations

import json
from typing import Any

from messages.untrusted import repair_text

REPLACEMENT = "\ufffd"

# One C-speed pass that fails on exactly what the walk below repairs (lone
# surrogates, bytes): the walk runs only when it fails, not on every request.
_ENCODE = json.JSONEncoder(ensure_ascii=False, check_circular=False).encode


def _all_clean(value: Any) -> bool:
    try:
        _ENCODE(value).encode("utf-8")
    except (UnicodeEncodeError, TypeError, ValueError):
        return False
    return True


def sanitize_text(text: str) -> str:
    """``text`` with surrogate pairs joined and lone surrogates replaced by U+FFFD
    (the project's one repair, ``messages.untrusted.repair_text``)."""
    return repair_text(text)


def sanitize_value(value: Any) -> tuple[Any, bool]:
    """Sanitise every string inside ``value`` (dicts, lists, tuples, bytes).

    Returns:
        The clean value (the input itself when nothing needed fixing) and
        whether anything changed.
    """
    if isinstance(value, (dict, list)) and _all_clean(value):
        return value, False
    return _sanitize(value)


def _sanitize(value: Any) -> tuple[Any, bool]:
    if isinstance(value, str):
        clean = sanitize_text(value)
        return clean, clean is not value
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace"), True
    if isinstance(value, dict):
        changed = False
        out: dict[Any, Any] = {}
        for key, item in value.items():
            clean_key, key_changed = _sanitize(key)
            clean_item, item_changed = _sanitize(item)
            out[clean_key] = clean_item
            changed = changed or key_changed or item_changed
        return (out, True) if changed else (value, False)
    if isinstance(value, (list, tuple)):
        items = [_sanitize(item) for item in value]
        if any(changed for _, changed in items):
            return type(value)(item for item, _ in items), True
        return value, False
    return value, False


def sanitize_messages(messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], bool]:
    """Sanitise a conversation history; returns the clean history and whether it changed."""
    clean, changed = sanitize_value(messages)
    return clean, changed
