"""Conversion between the internal OpenAI-style history and the OpenAI Responses API.

Outbound: system messages become ``instructions``; user and assistant turns
become input messages; assistant tool calls become ``function_call`` items
(with their ``call_id``, and the item ``id`` when we kept it); tool results
become ``function_call_output`` items; reasoning items of earlier turns are
replayed from the ``responses_items`` extra. Inbound: stream events become our
events, and the turn's output items are kept in ``responses_items``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from messages.chat import ChatMessage, messages_to_dicts
from messages.wire_shapes import wire_int, wire_object, wire_text
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


def to_responses_input(messages: Sequence[ChatMessage]) -> tuple[str | None, list[dict[str, Any]]]:
    """The history as (``instructions``, input items)."""
    instructions: list[str] = []
    items: list[dict[str, Any]] = []
    for msg in messages_to_dicts(messages):
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
    """Normalize a Responses usage object (the JSON of ``response.usage``)."""
    if not isinstance(raw, dict):
        return Usage()
    inp = wire_object(raw.get("input_tokens_details"))
    out = wire_object(raw.get("output_tokens_details"))
    return Usage(
        prompt_tokens=_tokens(raw.get("input_tokens")),
        completion_tokens=_tokens(raw.get("output_tokens")),
        cache_read_tokens=_tokens(inp.get("cached_tokens")),
        cache_write_tokens=_tokens(inp.get("cache_write_tokens")),
        reasoning_tokens=_tokens(out.get("reasoning_tokens")),
    )






def _tokens(value: Any) -> int:
    return wire_int(value) or 0


def _without_none(value: Any) -> Any:
    """``value`` with every null-valued key removed, at every depth (what is replayed to the API)."""
    if isinstance(value, dict):
        return {key: _without_none(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_without_none(item) for item in value]
    return value


class ResponsesChunkConverter:
    """Turns Responses stream events (the JSON the server sent) into ours; one instance per stream.

    Events are read as plain dicts (the stream is opened with :class:`~providers.sse.OpenAIEventStream`), as Chat
    Completions chunks are.
    """

    def __init__(self) -> None:
        self._tool_index: dict[int | None, int] = {}

    def __call__(self, event: Any, acc: TurnAccumulator) -> Iterable[StreamEvent]:
        """Events for one SSE event."""
        event = wire_object(event)
        kind = event.get("type")
        if kind == "response.output_text.delta":
            return acc.add_text(wire_text(event.get("delta")))
        if kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            return acc.add_reasoning(wire_text(event.get("delta")))
        if kind == "response.function_call_arguments.delta":
            return acc.add_arguments(self._tool_index.get(wire_int(event.get("output_index"))), wire_text(event.get("delta")))
        if kind == "response.output_item.added":
            item = wire_object(event.get("item"))
            if item.get("type") != "function_call":
                return ()
            index = len(self._tool_index)
            self._tool_index[wire_int(event.get("output_index"))] = index
            return [acc.start_call(index, wire_text(item.get("call_id")), wire_text(item.get("name")))]
        if kind == "response.output_item.done":
            return self._item_done(event, acc)
        if kind in ("response.completed", "response.incomplete"):
            return self._finished(event, acc)
        if kind == "response.failed":
            error = wire_object(wire_object(event.get("response")).get("error"))
            raise ProviderStatusError(
                f"response failed: {error.get('message') or 'unknown error'}",
                status_code=200,
                body={"error": error or None},
                error_type=error.get("code"),
            )
        if kind == "error":
            raise ProviderStatusError(
                f"in-stream error: {event.get('message')}",
                status_code=200,
                body={"error": {"code": event.get("code"), "message": event.get("message"), "param": event.get("param")}},
                error_type=event.get("code"),
            )
        return ()

    def _item_done(self, event: dict[str, Any], acc: TurnAccumulator) -> list[StreamEvent]:
        item = wire_object(event.get("item"))
        kind = item.get("type")
        if kind in ("reasoning", "function_call"):
            acc.extras.setdefault("responses_items", []).append(_without_none(item))
        if kind != "function_call":
            return []
        index = self._tool_index.get(wire_int(event.get("output_index")))
        if index is None:
            return []
        call = acc.tool_calls[index]
        if not call.arguments:
            call.arguments.append(wire_text(item.get("arguments")) or "{}")
        done = acc.complete_call(index)
        return [done] if done is not None else []

    def _finished(self, event: dict[str, Any], acc: TurnAccumulator) -> list[StreamEvent]:
        response = wire_object(event.get("response"))
        if event.get("type") == "response.incomplete":
            reason = wire_object(response.get("incomplete_details")).get("reason")
            acc.finish_reason = _INCOMPLETE.get(reason if isinstance(reason, str) else "", "length")
        else:
            acc.finish_reason = "tool_calls" if acc.tool_calls else "stop"
        acc.done = acc.complete = True
        return [acc.report_usage(usage_from_responses(response.get("usage")))]
