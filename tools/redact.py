"""Secret redaction: one pass for every tool result, transcript, log and summary.

Anything shaped like a credential is replaced by ``[REDACTED]``.  Where a
secret sits inside a larger structure (a URL, a header, a ``key=value``
assignment) only the secret part is replaced, so the text stays readable and
the model can still tell what was there.  The table of what counts as a
credential is :data:`tools._secret_rules.RULES`.

``redact_secrets`` works on plain text.  ``redact_tool_result`` works on a
tool's JSON result: it redacts each string inside it as the plain text it
stands for (a file's ``"api_key": "…"`` is escaped to ``\\"api_key\\"`` in the
JSON) and values under secret-named keys, and leaves a clean result
byte-for-byte as it was.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterator
from typing import Any

from tools._secret_names import is_secret_name, is_secret_value
from tools._secret_rules import (
    Span,
    has_digit_trigger,
    may_hold_secrets,
    no_trigger_but_digits,
    secret_spans,
    without_digits,
)

__all__ = ["REDACTED", "RepeatRedaction", "redact_secrets", "redact_tool_result", "replace_spans"]

REDACTED = "[REDACTED]"

# Joins a result's strings so that one pass redacts them all: no rule's match runs across a line break
# followed by a NUL (a private key cut off at its end stops at the NUL).
_JOIN = "\n\x00\n"


def redact_secrets(text: str) -> str:
    """Return ``text`` with every credential-shaped substring replaced by ``[REDACTED]``.

    Idempotent: redacting twice gives what redacting once gave.

    Args:
        text: any text that may reach a log, a transcript, a summary or a model.
    """
    if not text:
        return text
    return replace_spans(text, secret_spans(text))


class RepeatRedaction:
    """:func:`redact_secrets` for a run of texts that repeat but for their digits, each told apart from a secret's
    text in one look (a script's failing call retried in a loop: its result differs each time by the count in
    its loop warning, and redacting it looked for every rule's trigger each time).

    A text is returned as it is, as :func:`redact_secrets` would return it, when it holds no rule's trigger: none
    with a digit in it, and none without, which is known from the text with its digits taken out being the
    last text's, in which none was found (a trigger without a digit stays whole when the digits around it are
    taken out). Any other text is redacted.
    """

    def __init__(self) -> None:
        self._digitless = b""
        # Whether no trigger without a digit is in ``_digitless``; None: not looked for yet (a text seen once
        # costs one look, for the redaction; a text repeated, one more, once).
        self._clean: bool | None = None

    def redact(self, text: str) -> str:
        """``redact_secrets(text)``."""
        digitless = without_digits(text)
        if digitless != self._digitless:
            self._digitless, self._clean = digitless, None
        elif self._clean is None:
            self._clean = no_trigger_but_digits(digitless)
        if self._clean and not has_digit_trigger(text):
            return text
        return redact_secrets(text)


def redact_tool_result(result: str) -> str:
    """A tool's result with every secret in it redacted; ``result`` itself when it holds none.

    A JSON result is redacted string by string and re-encoded; anything else
    (or JSON too deep or too large for the decoder) as plain text.
    """
    if not result or not may_hold_secrets(result):
        return result
    try:
        value = json.loads(result)
    except (ValueError, RecursionError):
        return redact_secrets(result)
    if isinstance(value, str):
        redacted = redact_secrets(value)
        return result if redacted == value else json.dumps(redacted, ensure_ascii=False)
    slots = list(_string_slots(value))
    texts = [container[key] for container, key in slots]
    changed = False
    for (container, key), text, new in zip(slots, texts, _redact_all(texts)):
        if isinstance(key, str) and is_secret_name(key) and is_secret_value(text):
            new = REDACTED
        if new != text:
            container[key] = new
            changed = True
    # The raw JSON can look suspicious while no decoded string holds a secret.
    return json.dumps(value, ensure_ascii=False) if changed else result


def _string_slots(value: Any) -> Iterator[tuple[Any, Any]]:
    """``(container, key)`` of every string in a decoded JSON value (iterative: results may nest deeply)."""
    stack = [value]
    while stack:
        container = stack.pop()
        items = container.items() if isinstance(container, dict) else enumerate(container)
        for key, item in items:
            if isinstance(item, str):
                yield container, key
            elif isinstance(item, (dict, list)):
                stack.append(item)


def _redact_all(texts: list[str]) -> list[str]:
    """``redact_secrets`` of each text, in one pass over them all (a result may hold thousands of strings)."""
    joined = _JOIN.join(texts)
    spans = secret_spans(joined)
    if not spans:
        return texts
    starts: list[int] = []
    offset = 0
    for text in texts:
        starts.append(offset)
        offset += len(text) + len(_JOIN)
    per_text: dict[int, list[Span]] = {}
    for start, end in spans:
        index = bisect.bisect_right(starts, start) - 1
        if start - starts[index] >= len(texts[index]):
            # Begun in a separator (a key's tail walked back to it): it belongs to the next text.
            index += 1
            start = starts[index]
        base = starts[index]
        per_text.setdefault(index, []).append((start - base, min(end - base, len(texts[index]))))
    return [replace_spans(text, per_text.get(index, [])) for index, text in enumerate(texts)]


def replace_spans(text: str, spans: list[Span]) -> str:
    """``text`` with each of ``spans`` (sorted, apart) replaced by ``[REDACTED]``."""
    if not spans:
        return text
    parts: list[str] = []
    last = 0
    for start, end in spans:
        parts.append(text[last:start])
        parts.append(REDACTED)
        last = end
    parts.append(text[last:])
    return "".join(parts)
