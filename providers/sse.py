"""Server-sent events read in bulk, for the SDKs' streams.

The SDKs' ``AsyncStream`` reads a body through three async generators of its own (events, SSE lines,
chunks) on top of httpx2's, and resumes each of them for every event; left before the body's end, the
three are closed later by Trio's async-generator finalizer, each in a system task. That was about
0.45 ms of CPU per model call here (12 % of the adapter's cost, 6 % of a tool turn's).

The SDKs' own extension point avoids it: a subclass of their ``AsyncStream`` handed to
``client.post(stream_cls=...)``, as they document for custom stream types. :func:`openai_event_stream`
(Chat Completions, Responses) and :func:`anthropic_event_stream` parse each network chunk at once with
:class:`SseParser` and keep their SDK's semantics: events as the JSON the server sent; OpenAI's
``[DONE]`` ends the stream (the rest of the body is read so that the connection can be reused) and an
``error`` object raises ``openai.APIError``; Anthropic's ``ping`` is skipped and its ``error`` event
raises ``anthropic.APIStatusError``.
"""
from __future__ import annotations

import collections
import functools
import json
from collections.abc import AsyncIterator
from types import ModuleType
from typing import Any

import trio

__all__ = ["EventSource", "SseEvent", "SseParser", "anthropic_event_stream", "openai_event_stream"]

#: Seconds the rest of a body is read after ``[DONE]`` before the connection is given up instead.
DRAIN_SECONDS = 2.0

_DONE = b"[DONE]"
_BOM = b"\xef\xbb\xbf"


class SseEvent:
    """One dispatched event: its ``event:`` name (None when unnamed) and its data, lines joined by ``\\n``."""

    __slots__ = ("data", "name")

    def __init__(self, name: str | None, data: bytes) -> None:
        self.name = name
        self.data = data

    def __repr__(self) -> str:
        return f"SseEvent({self.name!r}, {self.data!r})"


class SseParser:
    """The ``text/event-stream`` format, fed in chunks cut anywhere (WHATWG HTML, 9.2.6).

    Lines end with CRLF, LF or CR; ``data:`` lines of one event are joined with ``\\n``; a blank line
    dispatches the event if it has data; comments (``:``), ``id`` and ``retry`` are ignored; one space
    after the colon is dropped; a byte-order mark opening the stream is dropped.
    """

    def __init__(self) -> None:
        self._pending = b""
        self._data: list[bytes] = []
        self._name: str | None = None
        self._started = False
        # The last chunk ended with CR: an LF opening the next one belongs to that line end.
        self._after_cr = False

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """The events ``chunk`` completes, in order."""
        if not chunk:
            return []
        if self._after_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        self._after_cr = chunk.endswith(b"\r")
        text = self._pending + chunk if self._pending else chunk
        if not self._started:
            if _BOM.startswith(text):
                self._pending = text  # too little yet to tell a byte-order mark from data
                return []
            self._started = True
            text = text.removeprefix(_BOM)
        if b"\r" in text:
            text = text.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = text.split(b"\n")
        self._pending = lines.pop()
        events: list[SseEvent] = []
        for line in lines:
            if not line:
                if self._data:
                    events.append(SseEvent(self._name, b"\n".join(self._data)))
                self._data = []
                self._name = None
                continue
            field, colon, value = line.partition(b":")
            if not field:
                continue  # a comment
            if colon and value.startswith(b" "):
                value = value[1:]
            if field == b"data":
                self._data.append(value)
            elif field == b"event":
                self._name = value.decode("utf-8", errors="replace")
        return events


class EventSource:
    """One response body read as server-sent events, a network chunk at a time.

    The body is opened at the first read, so that whatever wraps ``response.aiter_bytes`` before it
    (:func:`providers.stream_close.hold_body_iterator`) sees the iterator.
    """

    def __init__(self, response: Any) -> None:
        self._response = response
        self._parser = SseParser()
        self._body: AsyncIterator[bytes] | None = None
        # Events parsed but not yet returned: handled one at a time, so an error event is raised
        # after the events before it, as the SDKs do.
        self._ready: collections.deque[SseEvent] = collections.deque()
        self._ended = False

    async def next_event(self) -> SseEvent | None:
        """The next event, or None once the body has ended (or :meth:`finish` ended the stream)."""
        while not self._ready:
            if self._ended:
                return None
            if self._body is None:
                self._body = self._response.aiter_bytes()
            try:
                chunk = await self._body.__anext__()
            except StopAsyncIteration:
                self._ended = True
                continue
            self._ready.extend(self._parser.feed(chunk))
        return self._ready.popleft()

    async def finish(self) -> None:
        """End the stream here: read the rest of the body so that the connection can be reused."""
        self._ended = True
        self._ready.clear()
        if self._body is not None:
            with trio.move_on_after(DRAIN_SECONDS):
                async for _ in self._body:
                    pass


def _stream_init(self: Any, *, cast_to: type, response: Any, client: Any, options: Any = None) -> None:
    """``__init__`` of the SDK stream subclasses, called by the SDK with ``AsyncStream``'s arguments.

    The SDK's own ``__init__`` is not run: it would open the generator chain these classes replace.
    """
    self.response = response
    self._cast_to = cast_to
    self._client = client
    self._options = options
    self._events = EventSource(response)


@functools.cache
def openai_event_stream(sdk: ModuleType) -> type:
    """The OpenAI SDK stream class whose items are the events' JSON objects (see the module's docstring),
    made once the SDK, which is imported lazily, is loaded.

    Its ``__anext__`` raises ``openai.APIError`` when an event carries an ``error`` object,
    ``json.JSONDecodeError`` when an event's data is not JSON, ``httpx2.HTTPError`` when the transport fails.
    """

    # The SDK module arrives as a value (it is imported lazily), so its class is no type to the checker.
    class OpenAIEventStream(sdk.AsyncStream[object]):  # type: ignore[name-defined]
        """An OpenAI SDK stream read in bulk."""

        __init__ = _stream_init

        def __aiter__(self) -> Any:
            return self

        async def __anext__(self) -> Any:
            event = await self._events.next_event()
            if event is None:
                raise StopAsyncIteration
            if event.data.startswith(_DONE):
                await self._events.finish()
                raise StopAsyncIteration
            value = json.loads(event.data)
            if isinstance(value, dict) and value.get("error"):
                error = value["error"]
                message = error.get("message") if isinstance(error, dict) else None
                if not message or not isinstance(message, str):
                    message = "An error occurred during streaming"
                raise sdk.APIError(message=message, request=self.response.request, body=error)
            return value

    return OpenAIEventStream


@functools.cache
def anthropic_event_stream(sdk: ModuleType) -> type:
    """The Anthropic SDK stream class whose items are the events' JSON objects (made once the SDK,
    which is imported lazily, is loaded).

    Like the SDK's own: ``ping`` and unnamed events are skipped, an ``error`` event raises
    ``anthropic.APIStatusError`` with the event's body.
    """

    # The SDK module arrives as a value (it is imported lazily), so its class is no type to the checker.
    class AnthropicEventStream(sdk.AsyncStream[object]):  # type: ignore[name-defined]
        """An Anthropic SDK stream read in bulk."""

        __init__ = _stream_init

        def __aiter__(self) -> Any:
            return self

        async def __anext__(self) -> Any:
            while (event := await self._events.next_event()) is not None:
                if event.name is None or event.name == "ping":
                    continue
                if event.name == "error":
                    raise self._error(event.data)
                return json.loads(event.data)
            raise StopAsyncIteration

        def _error(self, data: bytes) -> Exception:
            text = data.decode("utf-8", errors="replace")
            try:
                body: Any = json.loads(text)
                message = f"{body}"
            except ValueError:
                body, message = text, text or f"Error code: {self.response.status_code}"
            return sdk.APIStatusError(message, response=self.response, body=body)

    return AnthropicEventStream
