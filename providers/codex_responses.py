"""OpenAI Responses adapter (``client.responses``): OpenAI's Responses API and
the ChatGPT Codex backend."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._raw import post_stream
from ._lazy_sdk import openai_sdk
from ._telemetry import openai_request_headers
from .sse import openai_event_stream
from .base import ChunkConverter, SdkStreamAdapter
from .responses_convert import ResponsesChunkConverter, to_responses_input, to_responses_tools
from .types import ChatRequest

if TYPE_CHECKING:
    import openai


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
        sdk = await openai_sdk()  # before the client: the pool builds it with the SDK
        client: openai.AsyncOpenAI = self._client()
        return await post_stream(
            client, "/responses", build_responses_kwargs(request),
            # Events as plain dicts: see ResponsesChunkConverter.
            cast_to=sdk.types.responses.Response, stream_cls=openai_event_stream(sdk), headers=openai_request_headers(sdk),
        )

    def _converter(self) -> ChunkConverter:
        return ResponsesChunkConverter()
