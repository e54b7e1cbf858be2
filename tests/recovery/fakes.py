"""A plain in-process connector for the retry-loop tests where the wire is not the point.

The end-to-end tests (``test_end_to_end.py``) run the same loop over the real
SDKs against the scripted provider server.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing, asynccontextmanager
from typing import Any

import attrs
import trio

from providers._raw import encode_body
from providers.recovery import ProviderTarget
from messages.chat import AssistantMessage, messages_to_dicts
from messages.events import TextDelta
from providers.types import ChatRequest, StreamEvent, StreamFinished, ToolCallStarted, Usage, UsageReported


@attrs.frozen
class Outcome:
    """One scripted attempt: stream ``text`` in pieces, then fail with ``error`` or finish."""

    text: str = "ok"
    error: BaseException | None = None
    tool_call: str | None = None
    usage_first: bool = False


@attrs.frozen
class Call:
    """What one attempt was sent."""

    target: ProviderTarget
    api_key: str | None
    request: ChatRequest


class _Adapter:
    def __init__(self, connector: FakeConnector, target: ProviderTarget, api_key: str | None) -> None:
        self._connector = connector
        self._target = target
        self._key = api_key

    @asynccontextmanager
    async def stream(self, request: ChatRequest) -> AsyncIterator[AsyncIterator[StreamEvent]]:
        # As every real adapter: a body that cannot be encoded is refused before it is sent.
        encode_body({"messages": messages_to_dicts(request.messages), "tools": request.tools})
        self._connector.calls.append(Call(self._target, self._key, request))
        outcome = self._connector.script.pop(0)
        self._connector.open_streams += 1
        try:
            # aclosing: the loop stops reading at StreamFinished, so the generator must be closed here.
            async with aclosing(self._events(outcome)) as events:
                yield events
        finally:
            self._connector.open_streams -= 1

    async def _events(self, outcome: Outcome) -> AsyncIterator[StreamEvent]:
        if outcome.usage_first:
            yield UsageReported(Usage(prompt_tokens=10))
        for word in outcome.text.split():
            await trio.lowlevel.checkpoint()
            yield TextDelta(text=word + " ")
        if outcome.tool_call is not None:
            yield ToolCallStarted(index=0, call_id="call_0", name=outcome.tool_call)
        if outcome.error is not None:
            raise outcome.error
        yield StreamFinished(message=AssistantMessage(outcome.text), finish_reason="stop", usage=Usage())


@attrs.define
class FakeConnector:
    """Hands out adapters that play ``script`` in order, and records every call and rebuild."""

    script: list[Outcome]
    calls: list[Call] = attrs.Factory(list)
    rebuilds: list[tuple[ProviderTarget, str | None]] = attrs.Factory(list)
    open_streams: int = 0

    def adapter(self, target: ProviderTarget, api_key: str | None) -> _Adapter:
        return _Adapter(self, target, api_key)

    async def rebuild(self, target: ProviderTarget, api_key: str | None) -> None:
        await trio.lowlevel.checkpoint()
        self.rebuilds.append((target, api_key))
