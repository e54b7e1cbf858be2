"""Repair malformed tool-call arguments so a session never sends invalid JSON back.

Models (local ones especially) emit arguments with trailing commas, missing
closing brackets, stray closers, raw control characters or bad escapes. A
broken arguments string kept in history makes the provider reject every later
request, so whatever comes in, what goes out parses as a JSON object. Passes,
each applied on top of the previous one and followed by a parse attempt:

0. parse as is, with ``strict=False`` (raw control characters allowed)
1. drop trailing commas before ``}`` / ``]``
2. close unclosed strings, arrays and objects (also a closer that skipped a level)
3. drop closers that close nothing (bounded)
4. escape control characters and invalid backslashes inside strings

Last resort: ``"{}"`` — the tool then reports missing arguments, which the
model can recover from.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from messages.untrusted import JsonLimitExceeded, UntrustedJsonError
from messages.untrusted import loads as loads_untrusted

log = logging.getLogger(__name__)

EMPTY_ARGUMENTS = "{}"
_MAX_TRIMMED_CLOSERS = 50
_PAIRS = {"}": "{", "]": "["}
_CLOSER = {"{": "}", "[": "]"}
_VALID_ESCAPES = set('"\\/bfnrtu')


class _Unparseable(ValueError):
    """The candidate text is not a JSON object (internal to the passes)."""


class _OverLimit(_Unparseable):
    """The text nests too deeply or holds too long a number: no pass can make it acceptable."""


def _reject_constant(name: str) -> None:
    # NaN / Infinity parse in Python but are not JSON; drop them rather than
    # hand the provider a document it rejects.
    return None


def _parse(text: str) -> Any:
    # Lone surrogates come back repaired; deep nesting and over-long numbers are refused.
    try:
        return loads_untrusted(text, strict=False, constant=_reject_constant)
    except JsonLimitExceeded as exc:
        raise _OverLimit(str(exc)) from exc
    except UntrustedJsonError as exc:
        raise _Unparseable(str(exc)) from exc


def _load(text: str) -> str:
    value = _parse(text)
    if isinstance(value, str):
        # Arguments double-encoded as a JSON string: look inside once.
        value = _parse(value)
    if not isinstance(value, dict):
        raise _Unparseable(f"arguments must be a JSON object, got {type(value).__name__}")
    return json.dumps(value, ensure_ascii=False)


def _scan(text: str, on_char: Callable[[int, str, bool], None]) -> tuple[bool, bool]:
    """Call ``on_char(i, ch, in_string)`` per character; returns (ends in string, ends after a backslash)."""
    in_string = escaped = False
    for i, ch in enumerate(text):
        if in_string:
            on_char(i, ch, True)
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        on_char(i, ch, False)
        if ch == '"':
            in_string = True
    return in_string, escaped


def strip_trailing_commas(text: str) -> str:
    """Pass 1: remove commas that are followed (after whitespace) by ``}`` or ``]``."""
    drop: set[int] = set()
    last_comma: list[int | None] = [None]

    def visit(i: int, ch: str, in_string: bool) -> None:
        if in_string:
            last_comma[0] = None
        elif ch == ",":
            last_comma[0] = i
        elif ch in "}]" and last_comma[0] is not None:
            drop.add(last_comma[0])
            last_comma[0] = None
        elif not ch.isspace():
            last_comma[0] = None

    _scan(text, visit)
    return "".join(ch for i, ch in enumerate(text) if i not in drop)


def close_unclosed(text: str) -> str:
    """Pass 2: close an open string, then every open array/object, innermost first.

    A closer that skips a level (``[1, 2}``) gets the missing closers inserted
    before it; a dangling ``,`` is dropped and a dangling ``:`` gets ``null``.
    """
    out: list[str] = []
    stack: list[str] = []

    def visit(i: int, ch: str, in_string: bool) -> None:
        if not in_string and ch in _PAIRS and _PAIRS[ch] in stack and stack[-1] != _PAIRS[ch]:
            while stack[-1] != _PAIRS[ch]:
                out.append(_CLOSER[stack.pop()])
        out.append(ch)
        if in_string:
            return
        if ch in "{[":
            stack.append(ch)
        elif ch in _PAIRS and stack and stack[-1] == _PAIRS[ch]:
            stack.pop()

    in_string, escaped = _scan(text, visit)
    result = "".join(out)
    if in_string:
        result = (result[:-1] if escaped else result) + '"'
    result = result.rstrip()
    while result.endswith(","):
        result = result[:-1].rstrip()
    if result.endswith(":"):
        result += " null"
    elif stack and stack[-1] == "{" and result.endswith('"') and _awaits_value(result):
        result += ": null"
    return result + "".join(_CLOSER[opener] for opener in reversed(stack))


def _awaits_value(text: str) -> bool:
    """True when ``text`` ends in an object key that has no ``:`` yet (``{"a": 1, "b"``)."""
    start = text.rfind('"', 0, len(text) - 1)
    while start > 0 and text[start - 1] == "\\":
        start = text.rfind('"', 0, start - 1)
    before = text[:start].rstrip()
    return start > 0 and before.endswith((",", "{"))


def trim_excess_closers(text: str) -> str:
    """Pass 3: drop closers with no matching opener (at most 50 of them)."""
    drop: list[int] = []
    stack: list[str] = []

    def visit(i: int, ch: str, in_string: bool) -> None:
        if in_string:
            return
        if ch in "{[":
            stack.append(ch)
        elif ch in _PAIRS:
            if stack and stack[-1] == _PAIRS[ch]:
                stack.pop()
            elif len(drop) < _MAX_TRIMMED_CLOSERS:
                drop.append(i)

    _scan(text, visit)
    dropped = set(drop)
    return "".join(ch for i, ch in enumerate(text) if i not in dropped)


def escape_in_strings(text: str) -> str:
    """Pass 4: escape raw control characters and invalid backslash escapes inside strings."""
    out: list[str] = []
    in_string = escaped = False
    for ch in text:
        if not in_string:
            out.append(ch)
            in_string = ch == '"'
            continue
        if escaped:
            # The previous backslash was kept only if this escape is valid.
            out.append(ch if ch in _VALID_ESCAPES else "\\" + ch)
            escaped = False
        elif ch == "\\":
            out.append("\\")
            escaped = True
        elif ch == '"':
            out.append(ch)
            in_string = False
        elif ord(ch) < 0x20:
            out.append(json.dumps(ch)[1:-1])
        else:
            out.append(ch)
    return "".join(out)


_PASSES: tuple[Callable[[str], str], ...] = (strip_trailing_commas, close_unclosed, trim_excess_closers, escape_in_strings)


def repair_tool_arguments(raw: str | None, *, tool_name: str = "?") -> str:
    """A JSON object text for ``raw`` tool-call arguments, repaired if need be.

    Never raises and never returns invalid JSON; the result always parses to a
    ``dict``. Empty arguments become ``"{}"``.
    """
    if raw is None or not raw.strip():
        return EMPTY_ARGUMENTS
    text = raw.strip()
    try:
        return _load(text)
    except _OverLimit as exc:
        log.warning("arguments of tool %s refused (they %s); sending {}", tool_name, exc)
        return EMPTY_ARGUMENTS
    except _Unparseable:
        pass
    for repair in _PASSES:
        text = repair(text)
        try:
            repaired = _load(text)
        except _Unparseable:
            continue
        log.warning("repaired malformed arguments of tool %s (%s)", tool_name, repair.__name__)
        return repaired
    log.warning("arguments of tool %s could not be repaired; sending {}", tool_name)
    return EMPTY_ARGUMENTS
