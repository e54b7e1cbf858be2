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

import json
from typing import Any

from tools._secret_names import is_secret_name, is_secret_value
from tools._secret_rules import may_hold_secrets, secret_spans

__all__ = ["REDACTED", "redact_secrets", "redact_tool_result"]

REDACTED = "[REDACTED]"


def redact_secrets(text: str) -> str:
    """Return ``text`` with every credential-shaped substring replaced by ``[REDACTED]``.

    Idempotent: redacting twice gives what redacting once gave.

    Args:
        text: any text that may reach a log, a transcript, a summary or a model.
    """
    if not text:
        return text
    spans = secret_spans(text)
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
    redacted, changed = _redact_value(value)
    if not changed:
        # The raw JSON looked suspicious but no decoded string holds a secret.
        return result
    return json.dumps(redacted, ensure_ascii=False)


def _redact_value(value: Any) -> tuple[Any, bool]:
    """``value`` with secrets redacted, and whether anything changed (iterative: results may nest deeply)."""
    if isinstance(value, str):
        redacted = redact_secrets(value)
        return redacted, redacted is not value
    if not isinstance(value, (dict, list)):
        return value, False
    changed = False
    root: Any = {} if isinstance(value, dict) else []
    stack: list[tuple[Any, Any]] = [(value, root)]
    while stack:
        source, target = stack.pop()
        items = source.items() if isinstance(source, dict) else enumerate(source)
        for key, item in items:
            if isinstance(item, str):
                if isinstance(key, str) and is_secret_name(key) and is_secret_value(item):
                    new: Any = REDACTED
                else:
                    new = redact_secrets(item)
                changed = changed or new != item
            elif isinstance(item, (dict, list)):
                new = {} if isinstance(item, dict) else []
                stack.append((item, new))
            else:
                new = item
            if isinstance(target, dict):
                target[key] = new
            else:
                target.append(new)
    return root, changed
