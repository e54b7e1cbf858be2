"""OpenAI Responses wire format of the scripted provider (``/v1/responses``)."""

from __future__ import annotations

from typing import Any

import attrs

from . import wire_chat
from .sse import Render, sse
from .steps import split_even

_CREATED = 1_700_000_000

error_body = wire_chat.error_body


@attrs.define
class _Sequencer:
    """Numbers the events of one stream, as the service does."""

    n: int = 0

    def frame(self, data: dict[str, Any]) -> bytes:
        """Stamp the next sequence number on ``data``; its SSE frame."""
        data["sequence_number"] = self.n
        self.n += 1
        return sse(data, data["type"])


def mid_stream_error(r: Render, kind: str, message: str) -> bytes:
    """An ``error`` event inside the stream."""
    return sse({"type": "error", "code": kind, "message": message, "param": None, "sequence_number": 0}, "error")


def _usage(r: Render) -> dict[str, Any]:
    u = r.step.usage_figures(r.prompt_tokens)
    return {
        "input_tokens": u["prompt_tokens"],
        "input_tokens_details": {"cached_tokens": u["cache_read_tokens"], "cache_write_tokens": u["cache_write_tokens"]},
        "output_tokens": u["completion_tokens"],
        "output_tokens_details": {"reasoning_tokens": u["reasoning_tokens"]},
        "total_tokens": u["prompt_tokens"] + u["completion_tokens"],
    }


def _items(r: Render) -> list[dict[str, Any]]:
    step = r.step
    items: list[dict[str, Any]] = []
    if step.reasoning is not None:
        items.append(
            {
                "id": r.ident("rs"),
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": step.reasoning}],
                "encrypted_content": step.signature,
                "status": "completed",
            }
        )
    if step.text:
        items.append(
            {
                "id": r.ident("msg"),
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": step.text, "annotations": [], "logprobs": []}],
            }
        )
    for n, call in enumerate(step.tool_calls):
        items.append(
            {
                "id": r.ident("fc", n),
                "type": "function_call",
                "status": "completed",
                "call_id": call.id,
                "name": call.name,
                "arguments": call.arguments,
            }
        )
    return items


def _response(r: Render, status: str, output: list[dict[str, Any]], usage: dict[str, Any] | None) -> dict[str, Any]:
    incomplete = {"reason": "max_output_tokens"} if status == "incomplete" else None
    if status == "incomplete" and r.step.effective_finish_reason == "content_filter":
        incomplete = {"reason": "content_filter"}
    return {
        "id": r.ident("resp"),
        "object": "response",
        "created_at": _CREATED,
        "status": status,
        "error": None,
        "incomplete_details": incomplete,
        "model": r.model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": usage,
    }


def _final_status(r: Render) -> str:
    return "incomplete" if r.step.effective_finish_reason in ("length", "content_filter") else "completed"


def stream_frames(r: Render) -> list[bytes]:
    """Every SSE event of a streamed response, ``response.completed`` included."""
    seq = _Sequencer()
    step = r.step
    frames = [
        seq.frame({"type": "response.created", "response": _response(r, "in_progress", [], None)}),
        seq.frame({"type": "response.in_progress", "response": _response(r, "in_progress", [], None)}),
    ]
    items = _items(r)
    for index, item in enumerate(items):
        kind = item["type"]
        if kind == "reasoning":
            added = {**item, "summary": [], "status": "in_progress"}
        elif kind == "message":
            added = {**item, "content": [], "status": "in_progress"}
        else:
            added = {**item, "arguments": "", "status": "in_progress"}
        frames.append(seq.frame({"type": "response.output_item.added", "output_index": index, "item": added}))
        base = {"item_id": item["id"], "output_index": index}
        if kind == "reasoning":
            text = item["summary"][0]["text"]
            part: dict[str, Any] = {"type": "summary_text", "text": ""}
            frames.append(seq.frame({"type": "response.reasoning_summary_part.added", **base, "summary_index": 0, "part": part}))
            for piece in split_even(text, 3):
                frames.append(
                    seq.frame({"type": "response.reasoning_summary_text.delta", **base, "summary_index": 0, "delta": piece})
                )
            frames.append(seq.frame({"type": "response.reasoning_summary_text.done", **base, "summary_index": 0, "text": text}))
            frames.append(
                seq.frame(
                    {"type": "response.reasoning_summary_part.done", **base, "summary_index": 0, "part": {**part, "text": text}}
                )
            )
        elif kind == "message":
            part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            frames.append(seq.frame({"type": "response.content_part.added", **base, "content_index": 0, "part": part}))
            for piece in step.text_pieces():
                frames.append(
                    seq.frame(
                        {"type": "response.output_text.delta", **base, "content_index": 0, "delta": piece, "logprobs": []}
                    )
                )
            frames.append(
                seq.frame({"type": "response.output_text.done", **base, "content_index": 0, "text": step.text, "logprobs": []})
            )
            frames.append(
                seq.frame(
                    {"type": "response.content_part.done", **base, "content_index": 0, "part": {**part, "text": step.text}}
                )
            )
        else:
            for piece in split_even(item["arguments"], step.args_chunks):
                frames.append(seq.frame({"type": "response.function_call_arguments.delta", **base, "delta": piece}))
            frames.append(
                seq.frame({"type": "response.function_call_arguments.done", **base, "arguments": item["arguments"]})
            )
        frames.append(seq.frame({"type": "response.output_item.done", "output_index": index, "item": item}))
    status = _final_status(r)
    event = "response.completed" if status == "completed" else "response.incomplete"
    frames.append(seq.frame({"type": event, "response": _response(r, status, items, _usage(r))}))
    return frames


def complete_body(r: Render) -> dict[str, Any]:
    """The non-streaming ``response`` object."""
    return _response(r, _final_status(r), _items(r), _usage(r))
