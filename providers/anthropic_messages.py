"""Anthropic Messages adapter (``anthropic.AsyncAnthropic``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anthropic

from ._translate import SDK_ERRORS, translate_error
from .anthropic_convert import (
    THINKING_BUDGETS,
    AnthropicChunkConverter,
    to_anthropic_messages,
    to_anthropic_tools,
)
from .base import EventStream, close_quietly
from .caching import apply_system_and_3
from .types import ChatRequest, StreamEvent

INTERLEAVED_THINKING_BETA = "interleaved-thinking-2025-05-14"

# Anthropic needs room for an answer after the thinking budget.
_MIN_ANSWER_TOKENS = 1024


def build_anthropic_kwargs(request: ChatRequest, output_cap: int) -> dict[str, Any]:
    """The ``messages.create`` arguments for one request.

    ``max_tokens`` is always present and never above ``output_cap`` (the
    model's maximum output); a request without one asks for the cap.
    """
    system, messages = to_anthropic_messages(request.messages)
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


class AnthropicMessagesAdapter:
    """Streams Anthropic Messages through a shared ``anthropic.AsyncAnthropic``.

    Args:
        client: returns the SDK client; called per request so that a client
            rebuilt by the pool takes effect on the next call.
        stale_timeout: seconds without a chunk before ``StreamStalled``.
        output_cap: the model's maximum output tokens (``max_tokens`` ceiling).
    """

    api_mode = "anthropic_messages"

    def __init__(
        self,
        client: Callable[[], anthropic.AsyncAnthropic],
        *,
        stale_timeout: float,
        output_cap: Callable[[str], int],
    ) -> None:
        self._client = client
        self._stale = stale_timeout
        self._output_cap = output_cap

    @asynccontextmanager
    async def stream(self, request: ChatRequest) -> AsyncIterator[AsyncIterator[StreamEvent]]:
        """Start one streaming call (see :class:`providers.base.ProviderAdapter`)."""
        kwargs = build_anthropic_kwargs(request, self._output_cap(request.model))
        try:
            raw = await self._client().messages.create(**kwargs)
        except SDK_ERRORS as exc:
            raise translate_error(exc) from exc
        try:
            yield EventStream(raw, AnthropicChunkConverter(), self._stale, status_code=raw.response.status_code)
        finally:
            await close_quietly(raw.close)
