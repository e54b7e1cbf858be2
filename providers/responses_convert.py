"""Conversion between the internal OpenAI-style history and the OpenAI Responses API.

Outbound: system messages become ``instructions``; user and assistant turns
become input messages; assistant tool calls become ``function_call`` items
(with their ``call_id``, and the item ``id`` when we kept it); tool results
become ``function_call_output`` items; reasoning items of earlier turns are
replayed from the ``responses_items`` extra. Inbound: stream events become our
events, and the turn's output items are kept in ``responses_items``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from .base import TurnAccumulator
from .errors import ProviderStatusError
from .types import StreamEvent, Usage

_INCOMPLETE: Mapping[str, str] = MappingProxyType(
    {
        "max_output_tokens": "length",
        "content_filter": "content_filter",
    }
)


def to_responses_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI Chat function tools as Responses function tools."""
    out = []
    for tool in tools:
        fn = tool.get("function", tool)
        out.append(
            {
                "type": "function",
                "name": fn["name"],
                "description": fn.get("description", ""),
                "parameters": fn.get("parameters") or {"type": "object", "properties": {}},
                "strict": False,
            }
        )
    return out


def to_responses_input(messages: list[dict[str, Any]]) -> tuple[str | None, list[dict[str, Any]]]:
    """Internal history as (``instructions``, input items)."""
    instructions: list[str] = []
    items: list[dict[str, Any]] = []
    for msg in messages:
        role = msg.get("role")
        if role in ("system", "developer"):
            instructions.append(_plain_text(msg.get("content")))
        elif role == "user":
            items.append({"role": "user", "content": _input_parts(msg.get("content"))})
        elif role == "assistant":
            items.extend(_assistant_items(msg))
        elif role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": msg.get("tool_call_id", ""),
                    "output": _plain_text(msg.get("content")),
                }
            )
    return ("\n\n".join(i for i in instructions if i) or None), items


def _plain_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(p.get("text", "") for p in content if p.get("type") == "text")


def _input_parts(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str) or content is None:
        return [{"type": "input_text", "text": content or ""}]
    parts = []
    for part in content:
        if part.get("type") == "text":
            parts.append({"type": "input_text", "text": part.get("text", "")})
        elif part.get("type") == "image_url":
            image = part["image_url"]
            parts.append({"type": "input_image", "image_url": image["url"] if isinstance(image, dict) else image})
    return parts


def _assistant_items(msg: dict[str, Any]) -> list[dict[str, Any]]:
    kept = msg.get("responses_items") or []
    items = [dict(item) for item in kept if item.get("type") == "reasoning"]
    item_ids = {item.get("call_id"): item.get("id") for item in kept if item.get("type") == "function_call"}
    text = _plain_text(msg.get("content"))
    if text:
        items.append({"role": "assistant", "content": text})
    for call in msg.get("tool_calls") or ():
        fn = call.get("function", {})
        item = {"type": "function_call", "call_id": call["id"], "name": fn.get("name", ""), "arguments": fn.get("arguments") or "{}"}
        if item_ids.get(call["id"]):
            item["id"] = item_ids[call["id"]]
        items.append(item)
    return items


def usage_from_responses(raw: Any) -> Usage:
    """Normalize a Responses usage object."""
    if raw is None:
        return Usage()
    inp = getattr(raw, "input_tokens_details", None)
    out = getattr(raw, "output_tokens_details", None)
    return Usage(
        prompt_tokens=raw.input_tokens or 0,
        completion_tokens=raw.output_tokens or 0,
        cache_read_tokens=getattr(inp, "cached_tokens", None) or 0,
        cache_write_tokens=getattr(inp, "cache_write_tokens", None) or 0,
        reasoning_tokens=getattr(out, "reasoning_tokens", None) or 0,
    )


class ResponsesChunkConverter:
    """Turns Responses stream events into ours; one instance per stream."""

    def __init__(self) -> None:
        self._tool_index: dict[int, int] = {}

    def __call__(self, event: Any, acc: TurnAccumulator) -> Iterable[StreamEvent]:
        """Events for one SSE event."""
        kind = event.type
        if kind == "response.output_text.delta":
            return acc.add_text(event.delta)
        if kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            return acc.add_reasoning(event.delta)
        if kind == "response.function_call_arguments.delta":
            return acc.add_arguments(self._tool_index.get(event.output_index), event.delta)
        if kind == "response.output_item.added" and event.item.type == "function_call":
            index = len(self._tool_index)
            self._tool_index[event.output_index] = index
            return [acc.start_call(index, event.item.call_id, event.item.name)]
        if kind == "response.output_item.done":
            return self._item_done(event, acc)
        if kind in ("response.completed", "response.incomplete"):
            return self._finished(event, acc)
        if kind == "response.failed":
            error = event.response.error
            raise ProviderStatusError(
                f"response failed: {getattr(error, 'message', 'unknown error')}",
                status_code=200,
                body={"error": error.model_dump() if error is not None else None},
                error_type=getattr(error, "code", None),
            )
        if kind == "error":
            raise ProviderStatusError(
                f"in-stream error: {event.message}",
                status_code=200,
                body={"error": {"code": event.code, "message": event.message, "param": event.param}},
                error_type=event.code,
            )
        return ()

    def _item_done(self, event: Any, acc: TurnAccumulator) -> list[StreamEvent]:
        item = event.item
        if item.type in ("reasoning", "function_call"):
            acc.extras.setdefault("responses_items", []).append(item.model_dump(exclude_none=True))
        if item.type != "function_call":
            return []
        index = self._tool_index.get(event.output_index)
        if index is None:
            return []
        call = acc.tool_calls[index]
        if not call.arguments:
            call.arguments.append(item.arguments or "{}")
        done = acc.complete_call(index)
        return [done] if done is not None else []

    def _finished(self, event: Any, acc: TurnAccumulator) -> list[StreamEvent]:
        response = event.response
        if event.type == "response.incomplete":
            reason = getattr(response.incomplete_details, "reason", None)
            acc.finish_reason = _INCOMPLETE.get(reason or "", "length")
        else:
            acc.finish_reason = "tool_calls" if acc.tool_calls else "stop"
        acc.done = acc.complete = True
        return [acc.report_usage(usage_from_responses(response.usage))]
