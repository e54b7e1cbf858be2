"""OpenAI Responses adapter (``client.responses``): OpenAI's Responses API and
the ChatGPT Codex backend."""

from __future__ import annotations

from typing import Any

import openai
from openai.types.responses import Response

from ._raw import post_stream
from .sse import OpenAIEventStream
from ._telemetry import OPENAI_REQUEST_HEADERS
from .base import ChunkConverter, SdkStreamAdapter
from .responses_convert import ResponsesChunkConverter, to_responses_input, to_responses_tools
from .types import ChatRequest


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


class CodexResponsesAdapter(SdkStreamAdapter):
    """Streams the Responses API through a shared ``openai.AsyncOpenAI``."""

    api_mode = "codex_responses"

    async def _open(self, request: ChatRequest) -> Any:
        client: openai.AsyncOpenAI = self._client()
        return await post_stream(
            client, "/responses", build_responses_kwargs(request),
            # Events as plain dicts: see ResponsesChunkConverter.
            cast_to=Response, stream_cls=OpenAIEventStream, headers=OPENAI_REQUEST_HEADERS,
        )

    def _converter(self) -> ChunkConverter:
        return ResponsesChunkConverter()
