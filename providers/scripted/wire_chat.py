"""OpenAI Chat Completions wire format of the scripted provider (``/v1/chat/completions``)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from .sse import Render, sse, sse_done
from .steps import split_even

_CREATED = 1_700_000_000

_ERRORS: Mapping[int, tuple[str, str | None, str]] = MappingProxyType(
    {
        400: ("invalid_request_error", None, "Invalid request."),
        401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
        402: ("insufficient_quota", "insufficient_quota", "You exceeded your current quota, please check your plan and billing details."),
        403: ("invalid_request_error", "unsupported_country_region_territory", "Country, region, or territory not supported."),
        404: ("invalid_request_error", "model_not_found", "The model does not exist or you do not have access to it."),
        413: ("invalid_request_error", "request_too_large", "Request too large."),
        429: ("requests", "rate_limit_exceeded", "Rate limit reached for requests. Please try again in 1s."),
        500: ("server_error", None, "The server had an error while processing your request."),
        502: ("server_error", None, "Bad gateway."),
        503: ("server_error", None, "The engine is currently overloaded, please try again later."),
    }
)


def error_body(status: int, message: str | None = None) -> dict[str, Any]:
    """A realistic OpenAI error body for ``status``."""
    kind, code, default = _ERRORS.get(status, ("server_error" if status >= 500 else "invalid_request_error", None, f"HTTP {status}"))
    return {"error": {"message": message or default, "type": kind, "param": None, "code": code}}


def mid_stream_error(r: Render, kind: str, message: str) -> bytes:
    """An error object inside the stream, as OpenAI-compatible servers send one."""
    return sse({"error": {"message": message, "type": kind, "param": None, "code": kind}})


def _usage(r: Render) -> dict[str, Any]:
    u = r.step.usage_figures(r.prompt_tokens)
    return {
        "prompt_tokens": u["prompt_tokens"],
        "completion_tokens": u["completion_tokens"],
        "total_tokens": u["prompt_tokens"] + u["completion_tokens"],
        "prompt_tokens_details": {"cached_tokens": u["cache_read_tokens"], "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": u["reasoning_tokens"], "audio_tokens": 0},
    }


def _chunk(r: Render, delta: dict[str, Any], finish: str | None = None, *, usage_slot: bool = False) -> bytes:
    data: dict[str, Any] = {
        "id": r.ident("chatcmpl"),
        "object": "chat.completion.chunk",
        "created": _CREATED,
        "model": r.model,
        "system_fingerprint": None,
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }
    if usage_slot:
        # With include_usage, OpenAI sends "usage": null on every chunk but the last.
        data["usage"] = None
    return sse(data)


def stream_frames(r: Render, include_usage: bool) -> list[bytes]:
    """Every SSE frame of a streamed answer, ``[DONE]`` included."""
    step = r.step
    u = include_usage
    frames = [_chunk(r, {"role": "assistant", "content": ""}, usage_slot=u)]
    if step.reasoning:
        pieces = split_even(step.reasoning, 3)
        for n, piece in enumerate(pieces):
            delta: dict[str, Any] = {"reasoning": piece}
            if step.signature:
                # OpenRouter's structured form, which carries the signature.
                detail = {"type": "reasoning.text", "text": piece, "index": 0, "format": "anthropic-claude-v1"}
                if n == len(pieces) - 1:
                    detail["signature"] = step.signature
                delta["reasoning_details"] = [detail]
            frames.append(_chunk(r, delta, usage_slot=u))
    frames += [_chunk(r, {"content": piece}, usage_slot=u) for piece in step.text_pieces()]
    for index, call in enumerate(step.tool_calls):
        head: dict[str, Any] = {
            "index": index,
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        if call.extra_content is not None:
            head["extra_content"] = call.extra_content
        frames.append(_chunk(r, {"tool_calls": [head]}, usage_slot=u))
        for piece in split_even(call.arguments, step.args_chunks):
            frames.append(_chunk(r, {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}, usage_slot=u))
    frames.append(_chunk(r, {}, step.effective_finish_reason, usage_slot=u))
    if include_usage:
        frames.append(
            sse(
                {
                    "id": r.ident("chatcmpl"),
                    "object": "chat.completion.chunk",
                    "created": _CREATED,
                    "model": r.model,
                    "choices": [],
                    "usage": _usage(r),
                }
            )
        )
    frames.append(sse_done())
    return frames


def complete_body(r: Render) -> dict[str, Any]:
    """The non-streaming ``chat.completion`` object."""
    step = r.step
    message: dict[str, Any] = {"role": "assistant", "content": step.text, "refusal": None}
    if step.reasoning:
        message["reasoning"] = step.reasoning
    if step.tool_calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            | ({"extra_content": c.extra_content} if c.extra_content is not None else {})
            for c in step.tool_calls
        ]
    return {
        "id": r.ident("chatcmpl"),
        "object": "chat.completion",
        "created": _CREATED,
        "model": r.model,
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": step.effective_finish_reason}
        ],
        "usage": _usage(r),
    }
