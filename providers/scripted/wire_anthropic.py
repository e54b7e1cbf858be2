"""Anthropic Messages wire format of the scripted provider (``/v1/messages``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from .sse import Render, sse
from .steps import split_even

_STOP: Mapping[str, str] = MappingProxyType(
    {
        "stop": "end_turn",
        "tool_calls": "tool_use",
        "length": "max_tokens",
        "content_filter": "refusal",
    }
)

_ERRORS: Mapping[int, tuple[str, str]] = MappingProxyType(
    {
        400: ("invalid_request_error", "Invalid request."),
        401: ("authentication_error", "invalid x-api-key"),
        402: ("billing_error", "Your credit balance is too low to access the Anthropic API."),
        403: ("permission_error", "Your API key does not have permission to use the specified resource."),
        404: ("not_found_error", "The requested resource could not be found."),
        413: ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
        429: ("rate_limit_error", "This request would exceed the rate limit for your organization."),
        500: ("api_error", "Internal server error"),
        503: ("overloaded_error", "Overloaded"),
        529: ("overloaded_error", "Overloaded"),
    }
)


def error_body(status: int, message: str | None = None, request_id: str = "req_scripted") -> dict[str, Any]:
    """A realistic Anthropic error body for ``status``."""
    kind, default = _ERRORS.get(status, ("api_error" if status >= 500 else "invalid_request_error", f"HTTP {status}"))
    return {"type": "error", "error": {"type": kind, "message": message or default}, "request_id": request_id}


def mid_stream_error(r: Render, kind: str, message: str) -> bytes:
    """An ``event: error`` frame, as Anthropic sends when overloaded mid-stream."""
    return sse({"type": "error", "error": {"type": kind, "message": message}, "request_id": r.ident("req")}, "error")


def _usage(r: Render) -> dict[str, int]:
    u = r.step.usage_figures(r.prompt_tokens)
    return {
        "input_tokens": u["prompt_tokens"],
        "output_tokens": u["completion_tokens"],
        "cache_creation_input_tokens": u["cache_write_tokens"],
        "cache_read_input_tokens": u["cache_read_tokens"],
    }


def _blocks(r: Render) -> list[dict[str, Any]]:
    step = r.step
    blocks: list[dict[str, Any]] = []
    if step.reasoning is not None:
        blocks.append({"type": "thinking", "thinking": step.reasoning, "signature": step.signature or ""})
    if step.text:
        blocks.append({"type": "text", "text": step.text})
    for call in step.tool_calls:
        blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments})
    return blocks


def stream_frames(r: Render) -> list[bytes]:
    """Every SSE frame of a streamed message, ``message_stop`` included."""
    step = r.step
    usage = _usage(r)
    frames = [
        sse(
            {
                "type": "message_start",
                "message": {
                    "id": r.ident("msg"),
                    "type": "message",
                    "role": "assistant",
                    "model": r.model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {**usage, "output_tokens": 1},
                },
            },
            "message_start",
        ),
        sse({"type": "ping"}, "ping"),
    ]
    for index, block in enumerate(_blocks(r)):
        kind = block["type"]
        if kind == "thinking":
            start: dict[str, Any] = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": p} for p in split_even(block["thinking"], 3)]
            if block["signature"]:
                deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif kind == "text":
            start = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in step.text_pieces()]
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            deltas = [
                {"type": "input_json_delta", "partial_json": p}
                for p in split_even(block["input"], step.args_chunks)
            ]
        frames.append(sse({"type": "content_block_start", "index": index, "content_block": start}, "content_block_start"))
        frames += [
            sse({"type": "content_block_delta", "index": index, "delta": d}, "content_block_delta") for d in deltas
        ]
        frames.append(sse({"type": "content_block_stop", "index": index}, "content_block_stop"))
    frames.append(
        sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": _STOP[step.effective_finish_reason], "stop_sequence": None},
                "usage": {"output_tokens": usage["output_tokens"]},
            },
            "message_delta",
        )
    )
    frames.append(sse({"type": "message_stop"}, "message_stop"))
    return frames


def complete_body(r: Render) -> dict[str, Any]:
    """The non-streaming ``message`` object."""
    content = []
    for block in _blocks(r):
        if block["type"] == "tool_use":
            try:
                block = {**block, "input": json.loads(block["input"] or "{}")}
            except ValueError:
                block = {**block, "input": {}}
        content.append(block)
    return {
        "id": r.ident("msg"),
        "type": "message",
        "role": "assistant",
        "model": r.model,
        "content": content,
        "stop_reason": _STOP[r.step.effective_finish_reason],
        "stop_sequence": None,
        "usage": _usage(r),
    }
