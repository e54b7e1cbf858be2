"""The adapter interface and the streaming machinery the three adapters share.

An adapter turns one :class:`ChatRequest` into an SDK streaming call and the
SDK's chunks into :mod:`providers.types` events. :class:`EventStream` runs the
loop: stale-stream detection (see :mod:`providers._stale`), error translation,
and the final ``ToolCallCompleted`` / ``UsageReported`` / ``StreamFinished``
events built from a :class:`TurnAccumulator`.
"""

from __future__ import annotations

import collections
import functools
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, ClassVar, Protocol

import attrs
import trio

from messages.chat import AssistantMessage, ToolCall
from messages.events import ReasoningDelta, TextDelta
from messages.untrusted import repair_json, repair_text

from ._stale import guard_of
from ._translate import sdk_errors, translate_error
from .errors import ProviderConnectionError, StreamStalled
from .stream_close import CLOSE_GRACE_SECONDS, StreamCloser, close_quietly, close_stream, finish_stream, hold_body_iterator
from .types import (
    ChatRequest,
    StreamEvent,
    StreamFinished,
    ToolCallArgumentsDelta,
    ToolCallCompleted,
    ToolCallStarted,
    Usage,
    UsageReported,
)

__all__ = [
    "CLOSE_GRACE_SECONDS", "ChunkConverter", "EventStream", "ProviderAdapter", "SdkStreamAdapter", "ToolCallState",
    "TurnAccumulator", "close_quietly",
]


class ProviderAdapter(Protocol):
    """One wire protocol. Use::

        async with adapter.stream(request) as events:
            async for event in events:
                ...

    The last event is always ``StreamFinished``. Leaving the block early (or a
    cancel scope around it firing) closes the HTTP connection at once.

    Raises (from ``stream`` entry or from iteration):
        ProviderError: any SDK or transport failure, translated.
    """

    @property
    def api_mode(self) -> str:
        """The wire protocol (``chat_completions``, ``anthropic_messages``, ``codex_responses``)."""
        ...

    def stream(self, request: ChatRequest) -> AbstractAsyncContextManager[AsyncIterator[StreamEvent]]:
        """Start one streaming model call."""
        ...


@attrs.define
class ToolCallState:
    """A tool call being assembled from deltas."""

    call_id: str
    name: str
    arguments: list[str] = attrs.Factory(list)
    extra_content: dict[str, Any] | None = None
    completed: bool = False


@attrs.define
class TurnAccumulator:
    """Everything one assistant turn has produced so far."""

    text: list[str] = attrs.Factory(list)
    reasoning: list[str] = attrs.Factory(list)
    tool_calls: dict[int, ToolCallState] = attrs.Factory(dict)
    usage: Usage = attrs.Factory(Usage)
    finish_reason: str | None = None
    extras: dict[str, Any] = attrs.Factory(dict)
    done: bool = False
    # The protocol's last event was parsed ([DONE]'s usage chunk, message_stop, response.completed):
    # nothing after it changes the reply, so the turn need not wait for the end of the body.
    complete: bool = False
    usage_reported: bool = False

    # Every piece of text the model streams enters through these methods: lone surrogates are
    # repaired here, so the session, the store and the clients never see one.

    def add_text(self, text: str) -> list[StreamEvent]:
        """Append answer text; its event."""
        text = repair_text(text)
        self.text.append(text)
        return [TextDelta(text=text)]

    def add_reasoning(self, text: str) -> list[StreamEvent]:
        """Append reasoning text; its event."""
        text = repair_text(text)
        self.reasoning.append(text)
        return [ReasoningDelta(text=text)]

    def start_call(self, index: int, call_id: str, name: str) -> ToolCallStarted:
        """Open tool call ``index``; its event."""
        call_id, name = repair_text(call_id), repair_text(name)
        self.tool_calls[index] = ToolCallState(call_id=call_id, name=name)
        return ToolCallStarted(index=index, call_id=call_id, name=name)

    def add_arguments(self, index: int | None, delta: str) -> list[StreamEvent]:
        """Append argument text to call ``index`` (ignored for an unknown call or empty text)."""
        if index is None or not delta or index not in self.tool_calls:
            return []
        delta = repair_text(delta)
        self.tool_calls[index].arguments.append(delta)
        return [ToolCallArgumentsDelta(index=index, delta=delta)]

    def report_usage(self, usage: Usage) -> UsageReported:
        """Record the provider's usage figures; the event announcing them."""
        self.usage = usage
        self.usage_reported = True
        return UsageReported(usage)

    def complete_call(self, index: int) -> ToolCallCompleted | None:
        """Mark call ``index`` complete; its event, or None if already done."""
        call = self.tool_calls.get(index)
        if call is None or call.completed:
            return None
        call.completed = True
        return ToolCallCompleted(index=index, call_id=call.call_id, name=call.name, arguments="".join(call.arguments))

    def message(self) -> AssistantMessage:
        """The normalized assistant message."""
        calls = []
        for index in sorted(self.tool_calls):
            call = self.tool_calls[index]
            extras = {"extra_content": call.extra_content} if call.extra_content is not None else {}
            calls.append(ToolCall(call.call_id, call.name, "".join(call.arguments), extras))
        return AssistantMessage(
            "".join(self.text) or None, tuple(calls), "".join(self.reasoning) or None, repair_json(self.extras),
        )

    def finish_events(self) -> list[StreamEvent]:
        """The closing events: pending tool calls, usage, then ``StreamFinished``."""
        events: list[StreamEvent] = []
        for index in sorted(self.tool_calls):
            done = self.complete_call(index)
            if done is not None:
                events.append(done)
        reason = self.finish_reason or ("tool_calls" if self.tool_calls else "stop")
        if reason == "stop" and self.tool_calls:
            reason = "tool_calls"
        if not self.usage_reported:
            events.append(UsageReported(self.usage))
        events.append(StreamFinished(message=self.message(), finish_reason=reason, usage=self.usage))
        return events


class ChunkConverter(Protocol):
    """Turns one SDK chunk into events, updating the accumulator."""

    def __call__(self, chunk: Any, acc: TurnAccumulator, /) -> Iterable[StreamEvent]:
        """Events for ``chunk``."""
        ...


class EventStream:
    """Async iterator of events over one open SDK stream.

    A class rather than an async generator so that a read can sit in its own
    cancel scope (the fallback stale deadline) without a scope spanning a
    ``yield``. A stream that ends before the provider said it was complete is
    a ``ProviderConnectionError``.
    """

    def __init__(
        self,
        raw: Any,
        convert: ChunkConverter,
        stale_timeout: float,
        *,
        status_code: int = 200,
    ) -> None:
        # The SDK stream's own __anext__: its __aiter__ would add a generator
        # that nobody closes.
        self._raw = raw
        self._guard = guard_of(raw.response)
        if self._guard is not None:
            self._guard.arm(stale_timeout)
        self._convert = convert
        self._stale = stale_timeout
        self._status = status_code
        self._pending: collections.deque[StreamEvent] = collections.deque()
        self._acc = TurnAccumulator()
        self._finished = False

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> StreamEvent:
        """The next event; ``StreamFinished`` is the last.

        Raises:
            ProviderError: the stream failed, stalled or ended early.
        """
        while not self._pending:
            if self._finished:
                raise StopAsyncIteration
            chunk = await self._read()
            if chunk is _END:
                if not self._acc.done:
                    raise ProviderConnectionError(
                        "provider stream ended before the reply was complete", status_code=self._status
                    )
                self._finished = True
                self._pending.extend(self._acc.finish_events())
            else:
                self._pending.extend(self._convert(chunk, self._acc))
                if self._acc.complete:
                    self._finished = True
                    self._pending.extend(self._acc.finish_events())
        return self._pending.popleft()

    @property
    def complete(self) -> bool:
        """True once the reply is complete and every event was read: the rest of the body is not needed."""
        return self._acc.complete and self._finished and not self._pending

    async def _read(self) -> Any:
        guard = self._guard
        if guard is None:
            return await self._read_scoped()
        try:
            chunk = await self._raw.__anext__()
        except StopAsyncIteration:
            return _END
        except sdk_errors() as exc:
            if guard.fired:
                raise self._stalled() from exc
            raise translate_error(exc, stream_status=self._status) from exc
        guard.events += 1
        return chunk

    async def _read_scoped(self) -> Any:
        # For clients not built by the pool: a deadline scope around each read.
        with trio.move_on_after(self._stale):
            try:
                return await self._raw.__anext__()
            except StopAsyncIteration:
                return _END
            except sdk_errors() as exc:
                raise translate_error(exc, stream_status=self._status) from exc
        # Only reached when the stale deadline fired: the read returns otherwise.
        raise self._stalled()

    def _stalled(self) -> StreamStalled:
        return StreamStalled(f"provider sent no chunk for {self._stale:g} s", error_type="stream_stalled")


_END = object()


class SdkStreamAdapter:
    """What the three adapters share: open the SDK stream (errors translated),
    read it through :class:`EventStream`, close it however the block ends.

    Subclasses set ``api_mode`` and implement ``_open`` and ``_converter``.

    Args:
        client: returns the SDK client; called per request so that a client
            rebuilt by the pool takes effect on the next call.
        stale_timeout: seconds without a chunk before ``StreamStalled``.
        closer: finishes complete streams in the background (the pool's); without one, the
            rest of a complete stream's body is read before the block exits.
    """

    api_mode: ClassVar[str]

    def __init__(self, client: Callable[[], Any], *, stale_timeout: float, closer: StreamCloser | None = None) -> None:
        self._client = client
        self._stale = stale_timeout
        self._closer = closer

    async def _open(self, request: ChatRequest) -> Any:
        """Start the SDK's streaming call; returns its stream object."""
        raise NotImplementedError

    def _converter(self) -> ChunkConverter:
        """A chunk converter for one stream."""
        raise NotImplementedError

    @asynccontextmanager
    async def stream(self, request: ChatRequest) -> AsyncIterator[AsyncIterator[StreamEvent]]:
        """Start one streaming call (see :class:`ProviderAdapter`)."""
        try:
            raw = await self._open(request)
        except sdk_errors() as exc:
            raise translate_error(exc) from exc
        body = hold_body_iterator(raw.response)
        events = EventStream(raw, self._converter(), self._stale, status_code=raw.response.status_code)
        complete = False
        try:
            yield events
            complete = events.complete
        finally:
            if not complete:
                # Left early (cancelled, failed): the connection cannot be reused; close it now.
                await close_quietly(functools.partial(close_stream, raw, body))
            elif self._closer is not None:
                self._closer.close_later(functools.partial(finish_stream, raw, body))
            else:
                await close_quietly(functools.partial(finish_stream, raw, body))
