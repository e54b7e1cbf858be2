"""OpenAI Chat Completions adapter (``openai.AsyncOpenAI``): OpenAI, OpenRouter,
local servers and any OpenAI-compatible endpoint."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from messages.chat import ChatMessage, dict_form

from ._raw import post_stream
from ._lazy_sdk import openai_sdk
from ._telemetry import openai_request_headers
from .sse import openai_event_stream
from .base import ChunkConverter, SdkStreamAdapter, TurnAccumulator
from .modes import uses_developer_role
from .types import ChatRequest, StreamEvent, Usage

if TYPE_CHECKING:
    import openai

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
_WIRE_KEY_SET = frozenset(_WIRE_KEYS)
_DETAIL_TEXT_KEYS = ("text", "summary", "data", "signature")


def to_chat_messages(messages: Sequence[ChatMessage], model: str) -> list[dict[str, Any]]:
    """The history as Chat Completions messages.

    Drops provider extras (``reasoning``, ``anthropic_content`` ...) and
    sends ``system`` as ``developer`` to models that want it.
    """
    developer = uses_developer_role(model)
    out = []
    for msg in map(dict_form, messages):
        role = msg.get("role")
        if msg.keys() <= _WIRE_KEY_SET and (role == "user" or role == "tool" or (role == "assistant" and "content" in msg)):
            # Already wire-shaped: sent as is (the body is only serialized, never changed).
            out.append(msg)
            continue
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
        kwargs["tools"] = request.tools_json or request.tools
    if request.max_tokens is not None:
        # OpenAI's reasoning models reject max_tokens; everyone else knows max_tokens.
        key = "max_completion_tokens" if uses_developer_role(request.model) else "max_tokens"
        kwargs[key] = request.max_tokens
    if request.temperature is not None:
        kwargs["temperature"] = request.temperature
    if request.reasoning_effort is not None:
        kwargs["reasoning_effort"] = request.reasoning_effort
    return kwargs


def usage_from_chat(raw: Mapping[str, Any]) -> Usage:
    """Normalize a Chat Completions usage object (the JSON of a chunk's ``usage``)."""
    prompt_details = raw.get("prompt_tokens_details") or {}
    completion_details = raw.get("completion_tokens_details") or {}
    return Usage(
        prompt_tokens=raw.get("prompt_tokens") or 0,
        completion_tokens=raw.get("completion_tokens") or 0,
        cache_read_tokens=prompt_details.get("cached_tokens") or 0,
        cache_write_tokens=prompt_details.get("cache_write_tokens") or 0,
        reasoning_tokens=completion_details.get("reasoning_tokens") or 0,
    )


def convert_chat_chunk(chunk: Mapping[str, Any], acc: TurnAccumulator) -> Iterable[StreamEvent]:
    """Events for one ``chat.completion.chunk``, as the JSON the server sent.

    Chunks are read as plain dicts (the stream is opened with :class:`~providers.sse.OpenAIEventStream`):
    building the SDK's pydantic models for every chunk cost about twice the rest of
    reading the stream. Provider extras (OpenRouter's ``reasoning``/``reasoning_details``,
    DeepSeek's and vLLM's ``reasoning_content``, Gemini's ``extra_content``) are plain keys.
    """
    events: list[StreamEvent] = []
    usage = chunk.get("usage")
    if usage:
        events.append(acc.report_usage(usage_from_chat(usage)))
    choices = chunk.get("choices")
    if not choices:
        if usage and acc.done:
            # include_usage's last chunk comes after the finish reason: only [DONE] follows it.
            acc.complete = True
        return events
    choice = choices[0]
    delta = choice.get("delta")
    if delta:
        reasoning = delta.get("reasoning") or delta.get("reasoning_content")
        details = delta.get("reasoning_details")
        if isinstance(details, list) and details:
            detail_text = _merge_reasoning_details(details, acc)
            reasoning = reasoning or detail_text
        if isinstance(reasoning, str) and reasoning:
            events += acc.add_reasoning(reasoning)
        content = delta.get("content")
        if content:
            events += acc.add_text(content)
        for tc in delta.get("tool_calls") or ():
            events.extend(_tool_delta(tc, acc))
    finish_reason = choice.get("finish_reason")
    if finish_reason is not None:
        acc.finish_reason = _FINISH.get(finish_reason, "stop")
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


def _tool_delta(tc: Mapping[str, Any], acc: TurnAccumulator) -> list[StreamEvent]:
    events: list[StreamEvent] = []
    index = tc.get("index")
    if index is None:
        index = _infer_index(tc.get("id"), acc)
    fn = tc.get("function") or None
    if index not in acc.tool_calls:
        # A new call closes the earlier ones: providers stream calls one after another.
        for earlier in sorted(acc.tool_calls):
            done = acc.complete_call(earlier)
            if done is not None:
                events.append(done)
        events.append(acc.start_call(index, tc.get("id") or f"call_{index}", (fn.get("name") if fn else None) or ""))
        extra = tc.get("extra_content")
        if isinstance(extra, dict):
            acc.tool_calls[index].extra_content = extra
    if fn is not None:
        events += acc.add_arguments(index, fn.get("arguments") or "")
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
        sdk = await openai_sdk()  # before the client: the pool builds it with the SDK
        client: openai.AsyncOpenAI = self._client()
        return await post_stream(
            client, "/chat/completions", build_chat_kwargs(request),
            # Chunks as plain dicts: see convert_chat_chunk.
            cast_to=sdk.types.chat.ChatCompletion, stream_cls=openai_event_stream(sdk), headers=openai_request_headers(sdk),
        )

    def _converter(self) -> ChunkConverter:
        return convert_chat_chunk
