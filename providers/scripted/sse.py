"""Server-sent-event framing and the per-request context the wire renderers share."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import attrs

from .steps import Step


@attrs.frozen
class Render:
    """What a wire renderer needs to answer one request with one step."""

    step: Step
    model: str
    seq: int
    prompt_tokens: int

    def ident(self, prefix: str, n: int = 0) -> str:
        """A deterministic id unique within the server's life (``msg_000003_0``)."""
        return f"{prefix}_{self.seq:06d}_{n}"


def sse(data: Mapping[str, Any], event: str | None = None) -> bytes:
    """One SSE frame: an optional ``event:`` line, one ``data:`` line, a blank line."""
    payload = json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


def sse_done() -> bytes:
    """The OpenAI Chat Completions end-of-stream sentinel frame."""
    return b"data: [DONE]\n\n"


def estimate_prompt_tokens(body: object) -> int:
    """A rough prompt size for default usage figures: JSON characters / 4."""
    return max(1, len(json.dumps(body, default=str)) // 4)
