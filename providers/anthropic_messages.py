"""Anthropic Messages adapter (``anthropic.AsyncAnthropic``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._lazy_sdk import anthropic_sdk
from .anthropic_convert import (
    THINKING_BUDGETS,
    AnthropicChunkConverter,
    to_anthropic_messages,
    to_anthropic_tools,
)
from ._raw import post_stream
from .sse import anthropic_event_stream
from .stream_close import StreamCloser
from .base import ChunkConverter, SdkStreamAdapter
from .caching import apply_system_and_3
from .types import ChatRequest

if TYPE_CHECKING:
    import anthropic

INTERLEAVED_THINKING_BETA = "interleaved-thinking-2025-05-14"

# Anthropic needs room for an answer after the thinking budget.
_MIN_ANSWER_TOKENS = 1024


def build_anthropic_kwargs(request: ChatRequest, output_cap: int) -> dict[str, Any]:
    """The ``messages.create`` arguments for one request.

    ``max_tokens`` is always present and never above ``output_cap`` (the
    model's maximum output); a request without one asks for the cap.
    """
    system, messages = to_anthropic_messages(request.messages)
    if request.cache_ttl is not None:
        system, messages = apply_system_and_3(system, messages, request.cache_ttl)
    max_tokens = min(request.max_tokens or output_cap, output_cap)
    kwargs: dict[str, Any] = {
        "model": request.model,
        "messages": messages,
        "max_tokens": max_tokens,
        "stream": True,
    }
    if system:
        kwargs["system"] = system
    if request.tools:
        kwargs["tools"] = to_anthropic_tools(request.tools)
    budget = THINKING_BUDGETS.get(request.reasoning_effort or "")
    if budget is not None and max_tokens > _MIN_ANSWER_TOKENS + 1024:
        kwargs["thinking"] = {"type": "enabled", "budget_tokens": min(budget, max_tokens - _MIN_ANSWER_TOKENS)}
        kwargs["extra_headers"] = {"anthropic-beta": INTERLEAVED_THINKING_BETA}
    elif request.temperature is not None:
        # With thinking on, Anthropic accepts only its default temperature.
        kwargs["temperature"] = request.temperature
    return kwargs


class AnthropicMessagesAdapter(SdkStreamAdapter):
    """Streams Anthropic Messages through a shared ``anthropic.AsyncAnthropic``.

    Args:
        client, stale_timeout, closer: as for :class:`SdkStreamAdapter`.
        output_cap: the model's maximum output tokens (``max_tokens`` ceiling).
    """

    api_mode = "anthropic_messages"

    def __init__(
        self,
        client: Callable[[], anthropic.AsyncAnthropic],
        *,
        stale_timeout: float,
        output_cap: Callable[[str], int],
        closer: StreamCloser | None = None,
    ) -> None:
        super().__init__(client, stale_timeout=stale_timeout, closer=closer)
        self._output_cap = output_cap

    async def _open(self, request: ChatRequest) -> Any:
        body = build_anthropic_kwargs(request, self._output_cap(request.model))
        headers = body.pop("extra_headers", None)
        sdk = await anthropic_sdk()  # before the client: the pool builds it with the SDK
        client: anthropic.AsyncAnthropic = self._client()
        return await post_stream(
            client, "/v1/messages", body, cast_to=sdk.types.Message,
            # Events as plain dicts: see AnthropicChunkConverter.
            stream_cls=anthropic_event_stream(sdk), headers=headers,
        )

    def _converter(self) -> ChunkConverter:
        return AnthropicChunkConverter()
