"""The daemon's logging: one redacted line per event, on a stream that may vanish.

A daemon under systemd or started in the background can lose its stdout or
stderr (a closed pipe, a closed terminal); a write then raises ``OSError`` or
``ValueError`` and must never take the daemon down (docs/DECISIONS.md#d-safe-log-output).
Every record passes :func:`tools.redact.redact_secrets`, message and exception
text alike, so no key reaches a log; phone numbers (the user ids of Signal and WhatsApp) are masked.
"""

from __future__ import annotations

import logging
import re
import sys
from typing import IO, Any

from tools.redact import redact_secrets

__all__ = ["OneLineFormatter", "RedactingFilter", "SafeStream", "configure_logging", "install_safe_stdio", "mask_phone_numbers"]

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class SafeStream:
    """A text stream whose failed writes are dropped instead of raised."""

    def __init__(self, inner: IO[str]) -> None:
        self._inner = inner

    def write(self, data: str) -> int:
        """Write ``data``; report it written even when the stream is gone."""
        try:
            return self._inner.write(data)
        except (OSError, ValueError):
            return len(data)

    def flush(self) -> None:
        """Flush, ignoring a stream that is gone."""
        try:
            self._inner.flush()
        except (OSError, ValueError):
            pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


#: A phone number in international form (Signal and WhatsApp user ids are these).
_PHONE = re.compile(r"(?<![\w+])\+[1-9]\d{6,14}\b")


def mask_phone_numbers(text: str) -> str:
    """``text`` with each phone number shown by its country code's start and last four digits only
    (``+1555****4567``), as Hermes logs them: enough to tell users apart, not to call them."""
    if "+" not in text:
        return text
    return _PHONE.sub(lambda m: m.group()[:4] + "****" + m.group()[-4:], text)


def _redacted(text: str) -> str:
    return mask_phone_numbers(redact_secrets(text))


class RedactingFilter(logging.Filter):
    """Replaces a record's message (arguments merged in) by its redacted text."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Redact ``record`` in place; never drops it."""
        try:
            message = record.getMessage()
        except (TypeError, ValueError):
            message = f"{record.msg!r} {record.args!r}"
        record.msg = _redacted(message)
        record.args = None
        return True


class OneLineFormatter(logging.Formatter):
    """One line per record: newlines escaped, an exception shown as ``Type: text``
    (the full traceback of an actor's failure is in ``hermes-actors inspect``)."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as one redacted line."""
        exc_info = record.exc_info
        record.exc_info = None
        record.exc_text = None
        try:
            line = super().format(record)
        finally:
            record.exc_info = exc_info
        if exc_info and exc_info[1] is not None:
            line += f" [{type(exc_info[1]).__name__}: {exc_info[1]}]"
        return _redacted(line).replace("\r", "\\r").replace("\n", "\\n")


def install_safe_stdio() -> None:
    """Wrap ``sys.stdout`` and ``sys.stderr`` so a write to a vanished stream is dropped."""
    if not isinstance(sys.stdout, SafeStream):
        sys.stdout = SafeStream(sys.stdout)
    if not isinstance(sys.stderr, SafeStream):
        sys.stderr = SafeStream(sys.stderr)


def configure_logging(stream: IO[str], level: int = logging.INFO, label: str = "") -> logging.Handler:
    """Send every ``hermes_actors`` (and root) record to ``stream``, one redacted line each.

    ``label`` (a host process's ``host:<n>``) goes in every line, to tell the processes sharing one log apart.

    Returns:
        The handler, so the caller can remove it again.
    """
    handler = logging.StreamHandler(SafeStream(stream))
    handler.setFormatter(OneLineFormatter(LOG_FORMAT.replace("%(name)s", f"[{label}] %(name)s") if label else LOG_FORMAT))
    handler.addFilter(RedactingFilter())
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(level)
    # One line per request is noise at INFO; their failures still show.
    for chatty in ("httpx2", "httpcore2", "hypercorn"):
        logging.getLogger(chatty).setLevel(max(level, logging.WARNING))
    return handler
