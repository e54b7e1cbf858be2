"""Turning raw terminal output into text a model can read.

Programs colour their output, draw progress bars with carriage returns and set window
titles with OSC sequences; none of that helps the model and all of it costs tokens.
And whatever a command prints (``cat .env``, ``env``) may hold credentials, which never
belong in a tool result: ``redact_output`` runs the project's one redaction function.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import trio

from tools.redact import redact_secrets

__all__ = ["clean_terminal_output", "redact_output", "redact_output_async", "strip_ansi"]

# Redaction costs about 20-70 µs per KB (bench/bench_redact.py); above this size it runs in a worker thread.
_INLINE_REDACT_CHARS = 4096

# CSI (ESC [ ... final byte), OSC (ESC ] ... BEL or ST), DCS/SOS/PM/APC strings (ESC P/X/^/_ ... ST),
# two-byte escapes (ESC followed by one byte of @-Z, \, -, _ or a charset designator) and the
# 8-bit C1 CSI form.
_ANSI = re.compile(
    r"""
    \x1b\[[0-?]*[ -/]*[@-~]
    | \x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?
    | \x1b[PX^_][^\x1b]*(?:\x1b\\)?
    | \x1b[()*+][0-9A-Za-z]
    | \x1b[@-Z\\-_=>78]
    | \x9b[0-?]*[ -/]*[@-~]
    """,
    re.VERBOSE,
)
# Other control characters that render as nothing useful (keep \t, \n, \r).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f]")


def strip_ansi(text: str) -> str:
    """Remove ANSI escape sequences (colours, cursor moves, titles) from ``text``."""
    if "\x1b" not in text and "\x9b" not in text:
        return text
    return _ANSI.sub("", text)


def clean_terminal_output(text: str) -> str:
    """Return ``text`` as a reader would see it on screen, as plain text.

    Strips escape sequences and stray control characters, and resolves carriage-return
    overwrites (a progress bar redrawn 100 times becomes its last state).
    """
    text = _CONTROL.sub("", strip_ansi(text))
    if "\r" not in text:
        return text
    text = text.replace("\r\n", "\n")
    lines = []
    for line in text.split("\n"):
        if "\r" in line:
            segments = [segment for segment in line.split("\r") if segment]
            line = segments[-1] if segments else ""
        lines.append(line)
    return "\n".join(lines)


def redact_output(text: str) -> str:
    """``text`` with credential-shaped substrings replaced by ``[REDACTED]``."""
    return redact_secrets(text) if text else text


async def redact_output_async(text: str, redact: Callable[[str], str] = redact_secrets) -> str:
    """``redact(text)``, off the event loop when ``text`` is large.

    Args:
        redact: ``redact_secrets`` for plain text (the default), ``redact_tool_result`` for a JSON result.
    """
    if len(text) <= _INLINE_REDACT_CHARS:
        return redact(text) if text else text
    return await trio.to_thread.run_sync(redact, text)
