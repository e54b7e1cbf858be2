"""Data that crosses the provider boundary: settings, requests, usage and stream events.

Conversation history is :data:`~messages.chat.ChatMessage` values; each adapter turns them into its
wire protocol's dicts (the SDK payloads) and the reply into an :class:`~messages.chat.AssistantMessage`. Streamed text is
the session events' own :class:`~messages.events.TextDelta` and
:class:`~messages.events.ReasoningDelta` (unstamped until a session publishes it). The adapters
convert to and from each wire protocol; this module fixes the shape of what
they hand back.

The normalized assistant message (``StreamFinished.message``), in its dict form::

    {"role": "assistant",
     "content": str | None,
     "tool_calls": [{"id", "type": "function", "function": {"name", "arguments"}}],  # omitted when none
     "reasoning": str | None,
     ...provider extras}

Provider extras (opaque to the agent loop, kept in history so that the next
request to the same provider can send them back):

``anthropic_content``
    The turn's Anthropic content blocks in the order received: ``thinking``
    (with its ``signature``), ``redacted_thinking`` (with its ``data``),
    ``text`` and ``tool_use`` (with its parsed ``input``). The Anthropic adapter
    sends the thinking blocks back unmodified, first in that assistant turn;
    other adapters ignore the key.
``reasoning_details``
    OpenRouter's structured reasoning (``reasoning.text`` / ``reasoning.encrypted``
    / ``reasoning.summary`` items, signatures included), merged per item; the
    Chat Completions adapter sends it back on that assistant message.
``responses_items``
    The Responses API output items of the turn (``reasoning`` items with their
    ``encrypted_content``/``id``, ``function_call`` items with ``call_id`` and
    item ``id``). The Responses adapter replays the ``reasoning`` items and
    reuses the ``function_call`` item ids.
``extra_content`` (on a tool call dict)
    Gemini's per-call opaque data (thought signatures) received on an OpenAI
    compatible stream; sent back unchanged on that tool call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Union

import attrs

from config.providers import API_MODES
from messages.chat import AssistantMessage, ChatMessage
from messages.events import ReasoningDelta, TextDelta
from messages.raw_json import RawJson

FINISH_REASONS = ("stop", "tool_calls", "length", "content_filter", "error")

#: An attrs validator of a field of any type.
Validator = Callable[[Any, "attrs.Attribute[Any]", Any], Any]


@attrs.frozen
class ProviderSettings:
    """Which provider, model and endpoint one adapter talks to."""

    provider: str
    model: str
    base_url: str | None
    api_mode: str = attrs.field(validator=attrs.validators.in_(API_MODES))
    api_key: str | None = attrs.field(default=None, repr=False)


_POSITIVE_INT: Validator = attrs.validators.and_(attrs.validators.instance_of(int), attrs.validators.gt(0))
_NON_NEGATIVE: Validator = attrs.validators.and_(attrs.validators.instance_of((int, float)), attrs.validators.ge(0))


def _optional(validator: Validator) -> Validator:
    """``validator``, None allowed (typed for fields whose type includes None)."""
    checked: Validator = attrs.validators.optional(validator)
    return checked


@attrs.frozen
class ChatRequest:
    """One model call: the history, and tool schemas in the internal OpenAI form."""

    messages: Sequence[ChatMessage]
    tools: list[dict[str, Any]]
    model: str
    max_tokens: int | None = attrs.field(default=None, validator=_optional(_POSITIVE_INT))
    temperature: float | None = attrs.field(default=None, validator=_optional(_NON_NEGATIVE))
    reasoning_effort: str | None = None
    # Anthropic cache breakpoint lifetime; None: no breakpoints (``prompt_caching.cache_ttl`` turned off).
    cache_ttl: str | None = attrs.field(default="5m", validator=_optional(attrs.validators.in_(("5m", "1h"))))
    # ``tools`` encoded once by the caller (a session's frozen list), spliced into a Chat Completions
    # body instead of encoding the same kilobytes at every call; None: encoded with the body.
    tools_json: RawJson | None = attrs.field(default=None, eq=False, repr=False)


@attrs.frozen
class Usage:
    """Token usage of one call, normalized across providers.

    ``prompt_tokens`` counts every input token, cached ones included (OpenAI's
    meaning; Anthropic's ``input_tokens`` excludes them, so the adapter adds
    the cache figures back in).
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens (cache figures are part of the prompt)."""
        return self.prompt_tokens + self.completion_tokens


@attrs.frozen
class ToolCallStarted:
    """The model began tool call number ``index`` of this turn."""

    index: int
    call_id: str
    name: str


@attrs.frozen
class ToolCallArgumentsDelta:
    """More raw JSON text of tool call ``index``'s arguments."""

    index: int
    delta: str


@attrs.frozen
class ToolCallCompleted:
    """Tool call ``index`` is complete; ``arguments`` is its whole raw JSON text."""

    index: int
    call_id: str
    name: str
    arguments: str


@attrs.frozen
class UsageReported:
    """The provider reported usage (may arrive more than once; the last wins)."""

    usage: Usage


@attrs.frozen
class StreamFinished:
    """Always the last event: the normalized assistant message and why it ended."""

    message: AssistantMessage
    finish_reason: str
    usage: Usage


StreamEvent = Union[
    TextDelta,
    ReasoningDelta,
    ToolCallStarted,
    ToolCallArgumentsDelta,
    ToolCallCompleted,
    UsageReported,
    StreamFinished,
]
