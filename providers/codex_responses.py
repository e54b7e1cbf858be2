"""OpenAI Responses adapter (``client.responses``): OpenAI's Responses API and
the ChatGPT Codex backend."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import openai

from ._translate import SDK_ERRORS, translate_error
from .base import EventStream, close_quietly
from .responses_convert import ResponsesChunkConverter, to_responses_input, to_responses_tools
from .types import ChatRequest, StreamEvent


def build_responses_kwargs(request: ChatRequest) -> dict[str, Any]:
    """The ``responses.create`` arguments for one request.

    ``store`` is off (the Codex backend requires it), so reasoning travels as
    encrypted content that we ask for and replay.
    """
    instructions, items = to_responses_input(request.messages)
    kwargs: dict[str, Any] = {
        "model": request.model,
        "input": items,
        "stream": True,
        "store": False,
    }
    if instructions:
        kwargs["instructions"] = instructions
    if request.tools:
        kwargs["tools"] = to_responses_tools(request.tools)
    if request.max_tokens is not None:
        kwargs["max_output_tokens"] = request.max_tokens
    if request.temperature is not None:
        kwargs["temperature"] = request.temperature
    if request.reasoning_effort is not None:
        kwargs["reasoning"] = {"effort": request.reasoning_effort, "summary": "auto"}
        kwargs["include"] = ["reasoning.encrypted_content"]
    return kwargs


class CodexResponsesAdapter:
    """Streams the Responses API through a shared ``openai.AsyncOpenAI``.

    Args:
        client: returns the SDK client; called per request so that a client
            rebuilt by the pool takes effect on the next call.
        stale_timeout: seconds without a chunk before ``StreamStalled``.
    """

    api_mode = "codex_responses"

    def __init__(self, client: Callable[[], openai.AsyncOpenAI], *, stale_timeout: float) -> None:
        self._client = client
        self._stale = stale_timeout

    @asynccontextmanager
    async def stream(self, request: ChatRequest) -> AsyncIterator[AsyncIterator[StreamEvent]]:
        """Start one streaming call (see :class:`providers.base.ProviderAdapter`)."""
        try:
            raw = await self._client().responses.create(**build_responses_kwargs(request))
        except SDK_ERRORS as exc:
            raise translate_error(exc) from exc
        try:
            yield EventStream(raw, ResponsesChunkConverter(), self._stale, status_code=raw.response.status_code)
        finally:
            await close_quietly(raw.close)
