"""Posting request bodies we built ourselves through the SDKs' low-level ``post``.

Our request bodies are plain JSON already (converted at the boundary), so the
SDKs' per-call ``async_transform`` of them, which walks every message of the
history against TypedDicts, is pure cost: it grew to most of a turn's CPU on
long conversations. ``client.post`` is the SDKs' documented way to call an
endpoint with a raw body; it keeps everything else (auth, headers, errors,
the SDK's own stream classes).
"""

from __future__ import annotations

from typing import Any

__all__ = ["post_stream"]


async def post_stream(
    client: Any, path: str, body: dict[str, Any], *, cast_to: type, stream_cls: type, headers: dict[str, str] | None = None
) -> Any:
    """POST ``body`` to ``path`` and return the SDK's async stream of events."""
    options: dict[str, Any] = {"headers": headers} if headers else {}
    return await client.post(path, body=body, cast_to=cast_to, stream=True, stream_cls=stream_cls, options=options)
