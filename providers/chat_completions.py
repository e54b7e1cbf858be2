"""OpenAI Chat Completions adapter (``openai.AsyncOpenAI``): OpenAI, OpenRouter,
local servers and any OpenAI-compatible endpoint."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

import openai
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from ._raw import post_stream
from .base import ChunkConverter, SdkStreamAdapter, TurnAccumulator
from .modes import uses_developer_role
from .types import ChatRequest, StreamEvent, Usage

_FINISH: Mapping[str, str] = MappingProxyType(
    {
        "stop": "stop",
        "length": "length",
        "tool_calls": "tool_calls",
        "function_call": "tool_calls",
        "content_filter": "content_filter",
        "error": "error",
    }
)

# Keys of an internal message the wire accepts; other provider extras stay home.
_WIRE_KEYS = ("role", "content", "tool_calls", "tool_call_id", "name", "reasoning_details")
_DETAIL_TEXT_KEYS = ("text", "summary", "data", "signature")


def to_chat_messages(messages: list[dict[str, Any]], model: str) -> list[dict[str, Any]]:
    """Internal history as Chat Completions messages.

    Drops provider extras (``reasoning``, ``anthropic_content`` ...) and
    sends ``system`` as ``developer`` to models that want it.
    """
    developer = uses_developer_role(model)
    out = []
    for msg in messages:
        wire = {k: msg[k] for k in _WIRE_KEYS if k in msg}
        if developer and wire.get("role") == "system":
            wire["role"] = "developer"
        if wire.get("role") == "assistant" and "content" not in wire:
            wire["content"] = None
        out.append(wire)
    return out


def build_chat_kwargs(request: ChatRequest) -> dict[str, Any]:
    """The ``chat.completions.create`` arguments for one request."""
    kwargs: dict[str, Any] = {
        "model": request.model,
        "messages": to_chat_messages(request.messages, request.model),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if request.tools:
        kwargs["tools"] = request.tools
    if request.max_tokens is not None:
        # OpenAI's reasoning models reject max_tokens; everyone else knows max_tokens.
        key = "max_completion_tokens" if uses_developer_role(request.model) else "max_tokens"
        kwargs[key] = request.max_tokens
    if request.temperature is not None:
        kwargs["temperature"] = request.temperature
    if request.reasoning_effort is not None:
        kwargs["reasoning_effort"] = request.reasoning_effort
    return kwargs


def usage_from_chat(raw: Any) -> Usage:
    """Normalize a Chat Completions usage object."""
    prompt_details = getattr(raw, "prompt_tokens_details", None)
    completion_details = getattr(raw, "completion_tokens_details", None)
    return Usage(
        prompt_tokens=raw.prompt_tokens or 0,
        completion_tokens=raw.completion_tokens or 0,
        cache_read_tokens=(getattr(prompt_details, "cached_tokens", None) or 0),
        cache_write_tokens=(getattr(prompt_details, "cache_write_tokens", None) or 0),
        reasoning_tokens=(getattr(completion_details, "reasoning_tokens", None) or 0),
    )


def convert_chat_chunk(chunk: Any, acc: TurnAccumulator) -> Iterable[StreamEvent]:
    """Events for one ``chat.completion.chunk``."""
    events: list[StreamEvent] = []
    if chunk.usage is not None:
        events.append(acc.report_usage(usage_from_chat(chunk.usage)))
    if not chunk.choices:
        return events
    choice = chunk.choices[0]
    delta = choice.delta
    if delta is not None:
        # OpenRouter sends ``reasoning``, DeepSeek and vLLM ``reasoning_content``.
        extra = delta.model_extra or {}
        reasoning = extra.get("reasoning") or extra.get("reasoning_content")
        details = extra.get("reasoning_details")
        if isinstance(details, list) and details:
            detail_text = _merge_reasoning_details(details, acc)
            reasoning = reasoning or detail_text
        if isinstance(reasoning, str) and reasoning:
            events += acc.add_reasoning(reasoning)
        if delta.content:
            events += acc.add_text(delta.content)
        if delta.tool_calls:
            for tc in delta.tool_calls:
                events.extend(_tool_delta(tc, acc))
    if choice.finish_reason is not None:
        acc.finish_reason = _FINISH.get(choice.finish_reason, "stop")
        acc.done = True
    return events


def _merge_reasoning_details(details: list[Any], acc: TurnAccumulator) -> str:
    """Fold streamed ``reasoning_details`` pieces into whole items; their new text."""
    merged: list[dict[str, Any]] = acc.extras.setdefault("reasoning_details", [])
    text = []
    for item in details:
        if not isinstance(item, dict):
            continue
        same = [m for m in merged if m.get("index") == item.get("index") and m.get("type") == item.get("type")]
        if not same:
            merged.append(dict(item))
        else:
            target = same[-1]
            for key, value in item.items():
                if key in _DETAIL_TEXT_KEYS and isinstance(value, str) and isinstance(target.get(key), str):
                    target[key] += value
                elif value is not None:
                    target[key] = value
        if item.get("type") == "reasoning.text" and isinstance(item.get("text"), str):
            text.append(item["text"])
    return "".join(text)


def _tool_delta(tc: Any, acc: TurnAccumulator) -> list[StreamEvent]:
    events: list[StreamEvent] = []
    index = tc.index if tc.index is not None else _infer_index(tc.id, acc)
    fn = tc.function
    if index not in acc.tool_calls:
        # A new call closes the earlier ones: providers stream calls one after another.
        for earlier in sorted(acc.tool_calls):
            done = acc.complete_call(earlier)
            if done is not None:
                events.append(done)
        events.append(acc.start_call(index, tc.id or f"call_{index}", (fn.name if fn else None) or ""))
        extra = (tc.model_extra or {}).get("extra_content")
        if isinstance(extra, dict):
            acc.tool_calls[index].extra_content = extra
    if fn is not None:
        events += acc.add_arguments(index, fn.arguments or "")
    return events


def _infer_index(call_id: str | None, acc: TurnAccumulator) -> int:
    # Some OpenAI-compatible servers omit ``index``: a new id opens a call,
    # a known id or no id continues one.
    for index, call in acc.tool_calls.items():
        if call_id and call.call_id == call_id:
            return index
    if call_id or not acc.tool_calls:
        return len(acc.tool_calls)
    return max(acc.tool_calls)


class ChatCompletionsAdapter(SdkStreamAdapter):
    """Streams Chat Completions through a shared ``openai.AsyncOpenAI``."""

    api_mode = "chat_completions"

    async def _open(self, request: ChatRequest) -> Any:
        client: openai.AsyncOpenAI = self._client()
        return await post_stream(
            client, "/chat/completions", build_chat_kwargs(request),
            cast_to=ChatCompletion, stream_cls=openai.AsyncStream[ChatCompletionChunk],
        )

    def _converter(self) -> ChunkConverter:
        return convert_chat_chunk
