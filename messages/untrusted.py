"""Text and JSON from untrusted peers, made safe to pass on.

Two hazards cross every boundary of the daemon and are handled here, once:

- **Lone surrogates.** JSON may spell a UTF-16 half (``"\\udc80"``) that
  Python decodes into a ``str`` which no UTF-8 encoder accepts: SQLite, a
  socket write or an HTTP response then fails far from where the text came in.
  :func:`repair_text` and :func:`repair_json` replace each one with U+FFFD
  where the text enters, and are nearly free for clean text.
- **Hostile JSON.** ``json.loads`` raises ``RecursionError`` on 100,000 ``[``
  and a bare ``ValueError`` on an integer longer than Python's 4,300-digit
  conversion limit; NaN and Infinity are not JSON at all. :func:`loads`
  turns each of these into one :class:`UntrustedJsonError` whose text says
  what was wrong, bounds nesting to :data:`MAX_JSON_DEPTH` levels, and repairs
  the surrogates of the value it returns.

The depth bound costs nothing on the hot path: a text with no more than
``max_depth`` brackets cannot nest deeper, and ``str.count`` runs in C. A text
with more brackets is measured after it decoded, level by level over its
containers only (a 1 MB chat body of 2,000 messages: 9 ms to decode, under
1 ms to measure). The surrogate repair walks a value only when its text holds
an escape that may spell one.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from typing import Any

__all__ = [
    "MAX_JSON_DEPTH",
    "NUMBER_TOO_LONG",
    "JsonLimitExceeded",
    "JsonSyntaxError",
    "UntrustedJsonError",
    "is_number_too_long",
    "loads",
    "repair_json",
    "repair_text",
]

#: Arrays and objects nested deeper than this are refused. Real payloads (tool
#: arguments, JSON Schemas, chat bodies) stay far below it; the C decoder's
#: own recursion limit and every recursive consumer downstream stay far above.
MAX_JSON_DEPTH = 100

# A JSON escape that may decode to a UTF-16 half (a well-formed pair is caught too; repair leaves it alone).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
#: How a number over Python's conversion limit is described to whoever sent it.
NUMBER_TOO_LONG = f"a number of more than {sys.get_int_max_str_digits()} digits"


class UntrustedJsonError(ValueError):
    """Text from a peer is not JSON the daemon accepts.

    ``str()`` is a predicate fit to show that peer after its subject: "frame "
    + "is nested deeper than 100 levels". The tree::

        UntrustedJsonError(ValueError)   not UTF-8
        ├── JsonSyntaxError              not JSON (NaN and Infinity included)
        └── JsonLimitExceeded            nested too deeply, a number too long
    """


class JsonSyntaxError(UntrustedJsonError):
    """The text is not JSON; ``msg`` and ``pos`` are the decoder's (``pos`` is -1 for NaN/Infinity)."""

    def __init__(self, message: str, msg: str, pos: int) -> None:
        super().__init__(message)
        self.msg = msg
        self.pos = pos


class JsonLimitExceeded(UntrustedJsonError):
    """The text is JSON, but nested deeper or holding a longer number than the daemon accepts."""


def repair_text(text: str) -> str:
    """``text`` made encodable as UTF-8: a surrogate pair split into two code points is
    joined into its character, every lone surrogate becomes U+FFFD.

    Clean text is returned as it is (the same object), after one check that
    takes constant time for ASCII.
    """
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # Through UTF-16, a high+low pair stored as two code points joins; what stays unpaired is replaced.
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def repair_json(value: Any, *, max_depth: int | None = None) -> Any:
    """A JSON-like value with :func:`repair_text` applied to every string in it, keys included.

    Dicts and lists are copied, never changed in place; nesting is walked
    without recursion.

    Raises:
        JsonLimitExceeded: ``max_depth`` is given and the value nests deeper.
    """
    limit = sys.maxsize if max_depth is None else max_depth
    repaired, depth = _walk(value, limit)
    if depth > limit:
        raise JsonLimitExceeded(f"is nested deeper than {limit} levels")
    return repaired


def _reject_constant(name: str) -> Any:
    raise JsonSyntaxError(f"is not valid JSON: {name} is not a JSON value", f"{name} is not a JSON value", -1)


# Built once: json.loads with any keyword argument builds a new decoder per call.
_DECODERS = {strict: json.JSONDecoder(parse_constant=_reject_constant, strict=strict) for strict in (True, False)}
# JSON's own whitespace (what json.decoder skips); str.strip would take more.
_JSON_SPACE = " \t\n\r"


def _decode_whole(decoder: json.JSONDecoder, text: str) -> Any:
    """``decoder.decode(text)``, the same value and errors, without its two regular-expression passes."""
    start = len(text) - len(text.lstrip(_JSON_SPACE))
    value, end = decoder.raw_decode(text, start)
    if end != len(text):
        rest = text[end:].lstrip(_JSON_SPACE)
        if rest:
            raise json.JSONDecodeError("Extra data", text, len(text) - len(rest))
    return value


def loads(
    data: str | bytes | bytearray,
    *,
    max_depth: int = MAX_JSON_DEPTH,
    strict: bool = True,
    constant: Callable[[str], Any] | None = None,
) -> Any:
    """Decode JSON from an untrusted peer.

    Args:
        data: the JSON text, or its UTF-8 bytes.
        max_depth: the deepest nesting of arrays and objects accepted.
        strict: False lets strings hold raw control characters (as models write them).
        constant: the value for NaN/Infinity, given its name; refused when None.

    Returns:
        The value, with lone surrogates in its strings repaired.

    Raises:
        UntrustedJsonError: not UTF-8.
        JsonSyntaxError: not JSON (NaN/Infinity included unless ``constant`` is given).
        JsonLimitExceeded: nested deeper than ``max_depth``, or an integer over
            Python's conversion limit.
    """
    if isinstance(data, (bytes, bytearray)):  # a tuple: measurably faster than a union on the hot path
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UntrustedJsonError(f"is not valid UTF-8 (byte {exc.start})") from None
        raw_surrogates = False  # strict UTF-8 decoding never yields one
    else:
        text = data
        raw_surrogates = not _utf8_clean(text)
    # Nesting deeper than max_depth takes more than max_depth brackets, hence more characters.
    deep = len(text) > max_depth and text.count("[") + text.count("{") > max_depth
    decoder = _DECODERS[strict] if constant is None else json.JSONDecoder(parse_constant=constant, strict=strict)
    try:
        value = _decode_whole(decoder, text)
    except RecursionError:
        raise JsonLimitExceeded(f"is nested deeper than {max_depth} levels") from None
    except json.JSONDecodeError as exc:
        where = f"column {exc.colno}" if exc.lineno == 1 else f"line {exc.lineno} column {exc.colno}"
        raise JsonSyntaxError(f"is not valid JSON: {exc.msg} at {where}", exc.msg, exc.pos) from None
    except ValueError as exc:
        if not is_number_too_long(exc):
            raise
        raise JsonLimitExceeded(f"holds {NUMBER_TOO_LONG}") from None
    if deep and _nested_deeper(value, max_depth):
        raise JsonLimitExceeded(f"is nested deeper than {max_depth} levels")
    # "in" first: far cheaper than the regex, and most texts have no escape at all.
    escaped = "\\u" in text and _SURROGATE_ESCAPE.search(text) is not None
    if escaped or raw_surrogates:
        value, _ = _walk(value, sys.maxsize)
    return value


def _nested_deeper(value: Any, max_depth: int) -> bool:
    """Whether a decoded ``value`` nests deeper than ``max_depth``: level by level, containers only."""
    level = [value] if type(value) is dict or type(value) is list else []
    depth = 0
    while level:
        depth += 1
        if depth > max_depth:
            return True
        below = []
        for container in level:
            for item in container.values() if type(container) is dict else container:
                if type(item) is dict or type(item) is list:
                    below.append(item)
        level = below
    return False


def is_number_too_long(exc: ValueError) -> bool:
    """Whether ``exc`` is ``int()`` refusing a number over ``sys.get_int_max_str_digits()``.

    Python's own text for it speaks to a programmer, not to the peer that sent the number.
    """
    return "integer string conversion" in str(exc)


def _utf8_clean(text: str) -> bool:
    # A str handed in (not bytes) may already hold raw surrogates.
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _walk(value: Any, max_depth: int) -> tuple[Any, int]:
    """Repair the strings of ``value``; return it and its depth, stopping once deeper than ``max_depth``."""
    if isinstance(value, str):
        return repair_text(value), 0
    if not isinstance(value, dict | list):
        return value, 0
    deepest = 0
    # Each entry: a container still to copy, its depth, and where its copy goes (parent copy, key).
    root: list[Any] = [None]
    stack: list[tuple[Any, int, Any, Any]] = [(value, 1, root, 0)]
    while stack:
        container, depth, parent, key = stack.pop()
        deepest = max(deepest, depth)
        if deepest > max_depth:
            return value, deepest
        if isinstance(container, dict):
            rebuilt: Any = {}
            for k, v in container.items():
                rebuilt[repair_text(k) if isinstance(k, str) else k] = v
        else:
            rebuilt = list(container)
        items = rebuilt.items() if isinstance(rebuilt, dict) else enumerate(rebuilt)
        for k, v in list(items):
            if isinstance(v, str):
                rebuilt[k] = repair_text(v)
            elif isinstance(v, dict | list):
                stack.append((v, depth + 1, rebuilt, k))
        parent[key] = rebuilt
    return root[0], deepest
