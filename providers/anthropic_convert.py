"""Conversion between the internal OpenAI-style history and Anthropic Messages.

Outbound: system messages become the ``system`` blocks; assistant tool calls
become ``tool_use`` blocks (thinking blocks with signatures replayed first);
tool results become ``tool_result`` blocks, consecutive ones merged into a
single user turn; turns of the same role are merged so roles alternate.
Inbound: the stream's events become our events and one normalized message.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from messages.untrusted import UntrustedJsonError
from messages.untrusted import loads as loads_untrusted

from messages.chat import ChatMessage, messages_to_dicts
from messages.wire_shapes import wire_int, wire_object, wire_text
from .base import TurnAccumulator
from .types import StreamEvent, Usage

STOP_REASONS: Mapping[str, str] = MappingProxyType(
    {
        "end_turn": "stop",
        "stop_sequence": "stop",
        "pause_turn": "stop",
        "tool_use": "tool_calls",
        "max_tokens": "length",
        "model_context_window_exceeded": "length",
        "refusal": "content_filter",
    }
)

# Thinking budgets per reasoning effort (tokens).
THINKING_BUDGETS: Mapping[str, int] = MappingProxyType(
    {
        "minimal": 1024,
        "low": 2048,
        "medium": 8192,
        "high": 16384,
        "xhigh": 32768,
    }
)

THINKING_BLOCK_TYPES = ("thinking", "redacted_thinking")


def to_anthropic_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI function tool schemas as Anthropic tools."""
    out = []
    for tool in tools:
        fn = tool.get("function", tool)
        out.append(
            {
                "name": fn["name"],
                "description": fn.get("description", ""),
                "input_schema": fn.get("parameters") or {"type": "object", "properties": {}},
            }
        )
    return out


def to_anthropic_messages(messages: Sequence[ChatMessage]) -> tuple[list[dict[str, Any]] | None, list[dict[str, Any]]]:
    """Split the history into Anthropic ``system`` blocks and alternating messages."""
    system: list[dict[str, Any]] = []
    turns: list[dict[str, Any]] = []
    for msg in messages_to_dicts(messages):
        role = msg.get("role")
        if role in ("system", "developer"):
            system.extend(_content_blocks(msg.get("content")))
            continue
        if role == "assistant":
            blocks = _assistant_blocks(msg)
            wire_role = "assistant"
        elif role == "tool":
            blocks = [_tool_result(msg)]
            wire_role = "user"
        else:
            blocks = _content_blocks(msg.get("content"))
            wire_role = "user"
        if not blocks:
            continue
        if turns and turns[-1]["role"] == wire_role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": wire_role, "content": blocks})
    for turn in turns:
        # Anthropic wants tool results first in a user turn that also has text.
        turn["content"].sort(key=lambda b: b.get("type") != "tool_result")
    return (system or None), turns


def _content_blocks(content: Any) -> list[dict[str, Any]]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks = []
    for part in content:
        kind = part.get("type")
        if kind == "text":
            if part.get("text"):
                blocks.append({"type": "text", "text": part["text"]})
        elif kind == "image_url":
            blocks.append(_image_block(part["image_url"]))
        else:
            blocks.append(dict(part))
    return blocks


def _image_block(image: Any) -> dict[str, Any]:
    url = image["url"] if isinstance(image, dict) else str(image)
    if url.startswith("data:") and ";base64," in url:
        media_type, data = url[5:].split(";base64,", 1)
        return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}
    return {"type": "image", "source": {"type": "url", "url": url}}


def _assistant_blocks(msg: dict[str, Any]) -> list[dict[str, Any]]:
    # Thinking blocks go back unmodified (signatures included); text and tool
    # calls come from the message itself, which may have been repaired since.
    blocks: list[dict[str, Any]] = [
        dict(b) for b in msg.get("anthropic_content") or () if b.get("type") in THINKING_BLOCK_TYPES
    ]
    blocks += _content_blocks(msg.get("content"))
    for call in msg.get("tool_calls") or ():
        fn = call.get("function", {})
        blocks.append({"type": "tool_use", "id": call["id"], "name": fn.get("name", ""), "input": _parse_input(fn.get("arguments"))})
    return blocks


def _parse_input(arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, dict):
        return arguments
    try:
        value = loads_untrusted(arguments or "{}")
    except UntrustedJsonError:
        return {}
    return value if isinstance(value, dict) else {}


def _tool_result(msg: dict[str, Any]) -> dict[str, Any]:
    content = msg.get("content")
    if isinstance(content, list):
        content = _content_blocks(content)
    return {"type": "tool_result", "tool_use_id": msg.get("tool_call_id", ""), "content": content if content else ""}


def usage_from_anthropic(raw: Mapping[str, Any], previous: Usage | None = None) -> Usage:
    """Normalize Anthropic usage (the JSON object); ``message_delta`` carries only some fields."""
    prev = previous or Usage()
    cache_read = wire_int(raw.get("cache_read_input_tokens"))
    cache_write = wire_int(raw.get("cache_creation_input_tokens"))
    input_tokens = wire_int(raw.get("input_tokens"))
    cache_read = prev.cache_read_tokens if cache_read is None else cache_read
    cache_write = prev.cache_write_tokens if cache_write is None else cache_write
    if input_tokens is None:
        prompt = prev.prompt_tokens
    else:
        prompt = input_tokens + cache_read + cache_write
    output = wire_int(raw.get("output_tokens"))
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=prev.completion_tokens if output is None else output,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
        reasoning_tokens=prev.reasoning_tokens,
    )






class AnthropicChunkConverter:
    """Turns Anthropic stream events (the JSON the server sent) into ours; one instance per stream.

    Events are read as plain dicts (the stream is opened with :func:`~providers.sse.anthropic_event_stream`), as
    Chat Completions chunks are: the SDK's models cost more than the rest of reading the stream.
    Also rebuilds the turn's content blocks, in order, into the ``anthropic_content`` extra
    (thinking blocks keep their signatures).
    """

    def __init__(self) -> None:
        # Stream block index -> its parts so far (string fields as lists of pieces).
        self._blocks: dict[int | None, dict[str, Any]] = {}
        self._tool_index: dict[int | None, int] = {}

    def __call__(self, event: Any, acc: TurnAccumulator) -> Iterable[StreamEvent]:
        """Events for one SSE event."""
        event = wire_object(event)
        kind = event.get("type")
        if kind == "content_block_delta":
            return self._delta(event, acc)
        if kind == "content_block_start":
            return self._start(event, acc)
        if kind == "content_block_stop":
            return self._stop(event, acc)
        if kind == "message_start":
            acc.usage = usage_from_anthropic(wire_object(wire_object(event.get("message")).get("usage")))
        elif kind == "message_delta":
            stop_reason = wire_object(event.get("delta")).get("stop_reason")
            if isinstance(stop_reason, str):
                acc.finish_reason = STOP_REASONS.get(stop_reason, "stop")
                # Some proxies end the stream without message_stop; the stop reason is final.
                acc.done = True
            usage = event.get("usage")
            if isinstance(usage, dict):
                return [acc.report_usage(usage_from_anthropic(usage, acc.usage))]
        elif kind == "message_stop":
            acc.done = acc.complete = True
        return ()

    def _start(self, event: dict[str, Any], acc: TurnAccumulator) -> list[StreamEvent]:
        block = wire_object(event.get("content_block"))
        position = wire_int(event.get("index"))
        kind = block.get("type")
        if kind == "tool_use":
            index = len(self._tool_index)
            self._tool_index[position] = index
            call_id, name = wire_text(block.get("id")), wire_text(block.get("name"))
            self._blocks[position] = {"type": "tool_use", "id": call_id, "name": name}
            return [acc.start_call(index, call_id, name)]
        if kind == "thinking":
            self._blocks[position] = {"type": "thinking", "thinking": [], "signature": [wire_text(block.get("signature"))]}
        elif kind == "redacted_thinking":
            self._blocks[position] = {"type": "redacted_thinking", "data": wire_text(block.get("data"))}
        elif kind == "text":
            text = wire_text(block.get("text"))
            self._blocks[position] = {"type": "text", "text": [text] if text else []}
            if text:
                return acc.add_text(text)
        return []

    def _delta(self, event: dict[str, Any], acc: TurnAccumulator) -> list[StreamEvent]:
        delta = wire_object(event.get("delta"))
        kind = delta.get("type")
        position = wire_int(event.get("index"))
        block = self._blocks.get(position)
        if kind == "text_delta":
            text = wire_text(delta.get("text"))
            if block is not None:
                block["text"].append(text)
            return acc.add_text(text)
        if kind == "input_json_delta":
            return acc.add_arguments(self._tool_index.get(position), wire_text(delta.get("partial_json")))
        if kind == "thinking_delta":
            thinking = wire_text(delta.get("thinking"))
            if block is not None:
                block["thinking"].append(thinking)
            return acc.add_reasoning(thinking)
        if kind == "signature_delta" and block is not None:
            block["signature"].append(wire_text(delta.get("signature")))
        return []

    def _stop(self, event: dict[str, Any], acc: TurnAccumulator) -> list[StreamEvent]:
        position = wire_int(event.get("index"))
        block = self._blocks.pop(position, None)
        index = self._tool_index.get(position)
        events: list[StreamEvent] = []
        if index is not None:
            call = acc.tool_calls[index]
            if not call.arguments:
                call.arguments.append("{}")  # a call without input streams no JSON
            done = acc.complete_call(index)
            events = [done] if done is not None else []
            if block is not None:
                block["input"] = _parse_input("".join(call.arguments))
        if block is not None:
            for key in ("text", "thinking", "signature"):
                if isinstance(block.get(key), list):
                    block[key] = "".join(block[key])
            acc.extras.setdefault("anthropic_content", []).append(block)
        return events
