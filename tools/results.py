"""Tool results: what a handler returns, and what a call hands back.

A handler returns a :class:`ToolResult` (the JSON object the model sees) or
raises :class:`tools.errors.ToolError` with the message the model sees.
:func:`tools.dispatch.dispatch` renders the JSON once, at the boundary, and
hands back a :class:`ToolReply`: the text, and beside it whether the call
succeeded. Nothing downstream (the guardrails, the sandbox's RPC server, the
session's events) parses the text to find out.

The failure text keeps Hermes Agent's shape, ``{"error": "..."}``, with any
details after the message; :func:`error_text` is the one place that writes it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import attrs

from messages.untrusted import repair_text

__all__ = ["ToolReply", "ToolResult", "error_text"]

# One encoder for every result: ``json.dumps`` with a keyword builds a new encoder per call, which
# costs more than rendering a small result.
_ENCODER = json.JSONEncoder(ensure_ascii=False)


def error_text(message: str, **details: Any) -> str:
    """The JSON text of a failed call: ``{"error": message, **details}``.

    For results made outside :func:`~tools.dispatch.dispatch` (a call the
    guardrail stopped, one the operator killed, a call the model malformed);
    a handler raises :class:`~tools.errors.ToolError` instead.
    """
    return _ENCODER.encode({"error": repair_text(message), **details})


@attrs.frozen
class ToolResult:
    """A handler's successful answer: the JSON object the model sees.

    Attributes:
        payload: the object, rendered as JSON (non-ASCII kept) by :meth:`render`.
        unsuccessful: the call ran and answered, but what it reports is a failure the loop's
            guardrails count as one (a command's nonzero exit status, a memory store that is full).
        images: host paths of images the model is shown after the call (browser_vision's screenshot),
            where the session's model takes images.
    """

    payload: Mapping[str, Any]
    unsuccessful: bool = False
    images: tuple[str, ...] = ()

    def render(self) -> str:
        """The JSON text of :attr:`payload`.

        Raises:
            TypeError: the payload holds a value JSON cannot (a handler's bug; dispatch reports it).
        """
        return _ENCODER.encode(self.payload)


@attrs.frozen
class ToolReply:
    """What one tool call hands back: the text the model sees and whether the call succeeded.

    Attributes:
        text: the rendered result (redacted and capped when it came through dispatch).
        error: why the call failed, was refused or was stopped (redacted when it came through
            dispatch); None when it succeeded. Records that keep the reason apart from the text use it.
        unsuccessful: the handler answered, but with a failed outcome (:attr:`ToolResult.unsuccessful`).
        images: the images the handler asked to show the model (:attr:`ToolResult.images`).
    """

    text: str
    error: str | None = None
    unsuccessful: bool = False
    images: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """Whether the call succeeded."""
        return self.error is None

    @property
    def counts_as_failure(self) -> bool:
        """Whether the loop's guardrails count this call as a failure: an error, or a failed outcome."""
        return self.error is not None or self.unsuccessful

    @classmethod
    def failure(cls, message: str, **details: Any) -> ToolReply:
        """A failed call's reply: ``{"error": message, **details}``."""
        return cls(error_text(message, **details), error=message)
