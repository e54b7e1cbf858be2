"""Server-sent events read in bulk: the parser against the format, the OpenAI stream against a raw server."""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx2
import openai
import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletion

from providers._raw import post_stream
from providers._lazy_sdk import anthropic_sdk
from providers.sse import SseParser, anthropic_event_stream, openai_event_stream

_NAMES = st.one_of(st.none(), st.sampled_from(["message", "response.completed", "ping"]))
# Data lines hold no line break of their own; an event has at least one.
_LINES = st.lists(st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=8), min_size=1, max_size=3)
_EVENTS = st.lists(st.tuples(_NAMES, _LINES), max_size=6)


def _serialize(events: list[tuple[str | None, list[str]]], newline: str, comments: bool) -> bytes:
    out = []
    for name, lines in events:
        if comments:
            out.append(": keep-alive" + newline)
        if name is not None:
            out.append(f"event: {name}{newline}")
        out += [f"data: {line}{newline}" for line in lines]
        out.append(newline)
    return "".join(out).encode()


def _parse(body: bytes, cuts: list[int]) -> list[tuple[str | None, str]]:
    parser = SseParser()
    events = []
    start = 0
    for cut in [*sorted(set(cuts)), len(body)]:
        events += parser.feed(body[start:cut])
        start = cut
    return [(event.name, event.data.decode()) for event in events]


class TestSseParser:
    """Events come out as sent, whatever the line endings and wherever the chunks are cut."""

    @given(_EVENTS, st.sampled_from(["\n", "\r\n", "\r"]), st.booleans(), st.booleans(), st.data())
    @settings(max_examples=300, deadline=None)
    def test_round_trip(self, events, newline, comments, bom, data) -> None:
        body = (b"\xef\xbb\xbf" if bom else b"") + _serialize(events, newline, comments)
        cuts = data.draw(st.lists(st.integers(0, len(body)), max_size=8))
        assert _parse(body, cuts) == [(name, "\n".join(lines)) for name, lines in events]

    def test_what_the_format_says(self) -> None:
        body = b"event: only-a-name\n\ndata\n\ndata:no-space\ndata:  two\nid: 7\nretry: 10\n\n:comment\ndata: cut"
        assert _parse(body, []) == [(None, ""), (None, "no-space\n two")]

    def test_crlf_cut_between_cr_and_lf(self) -> None:
        parser = SseParser()
        assert parser.feed(b"data: a\r") == []
        assert [e.data for e in parser.feed(b"\n\r\n")] == [b"a"]


@asynccontextmanager
async def _raw_server(pieces: list[bytes], requests: list[int]) -> AsyncIterator[str]:
    """A loopback HTTP/1.1 server answering every POST with ``pieces`` as the chunks of a chunked
    body, one write each; ``requests`` gets, per request, the number of the connection it came on."""
    connections = 0

    async def handle(stream: trio.SocketStream) -> None:
        nonlocal connections
        connections += 1
        number = connections
        buffer = b""
        while True:
            while b"\r\n\r\n" not in buffer:
                data = await stream.receive_some(65536)
                if not data:
                    return
                buffer += data
            head, _, buffer = buffer.partition(b"\r\n\r\n")
            length = int(next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")))
            while len(buffer) < length:
                buffer += await stream.receive_some(65536)
            buffer = buffer[length:]
            requests.append(number)
            await stream.send_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
            for piece in pieces:
                await stream.send_all(b"%x\r\n%s\r\n" % (len(piece), piece))
                await trio.sleep(0)
            await stream.send_all(b"0\r\n\r\n")

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(functools.partial(trio.serve_tcp, handle, 0, host="127.0.0.1"))
        port = listeners[0].socket.getsockname()[1]
        yield f"http://127.0.0.1:{port}/v1"
        nursery.cancel_scope.cancel()


async def _items(client: openai.AsyncOpenAI) -> list[object]:
    stream = await post_stream(client, "/chat/completions", {"model": "m"}, cast_to=ChatCompletion, stream_cls=openai_event_stream(openai))
    try:
        return [item async for item in stream]
    finally:
        await stream.close()


class TestOpenAIEventStream:
    """The SDK builds our stream; it reads what real servers send and keeps the connection."""

    async def test_items_and_connection_reuse(self) -> None:
        chunk = {"choices": [{"delta": {"content": "hé"}}]}
        pieces = [
            b": OPENROUTER PROCESSING\r\n\r\n",
            b"data: " + json.dumps(chunk).encode()[:9],
            json.dumps(chunk).encode()[9:] + b"\r\n\r\ndata: {\"usage\":\r\ndata: {\"total_tokens\": 3}}\r\n\r\n",
            b"data: [DONE]\r\n\r\n",
        ]
        requests: list[int] = []
        async with _raw_server(pieces, requests) as url, httpx2.AsyncClient() as http:
            client = openai.AsyncOpenAI(api_key="k", base_url=url, max_retries=0, http_client=http)
            for _ in range(2):
                assert await _items(client) == [chunk, {"usage": {"total_tokens": 3}}]
        # The rest of the body was read after [DONE]: the second request reused the connection.
        assert requests == [1, 1]

    async def test_error_event_after_the_events_before_it(self) -> None:
        pieces = [b'data: {"choices": []}\n\ndata: {"error": {"message": "Overloaded", "type": "overloaded_error"}}\n\n']
        async with _raw_server(pieces, []) as url, httpx2.AsyncClient() as http:
            client = openai.AsyncOpenAI(api_key="k", base_url=url, max_retries=0, http_client=http)
            stream = await post_stream(client, "/chat/completions", {"model": "m"}, cast_to=ChatCompletion, stream_cls=openai_event_stream(openai))
            assert await stream.__anext__() == {"choices": []}
            with pytest.raises(openai.APIError) as info:
                await stream.__anext__()
            await stream.close()
        assert str(info.value) == "Overloaded"
        assert info.value.body == {"message": "Overloaded", "type": "overloaded_error"}


class TestAnthropicEventStream:
    """The Anthropic SDK builds our stream: pings and unnamed events skipped, an error event raised as its SDK does."""

    async def test_events_then_error(self) -> None:
        sdk = await anthropic_sdk()
        start = {"type": "message_start", "message": {"id": "m"}}
        pieces = [
            b"event: ping\ndata: {}\n\n" + b"data: {\"unnamed\": 1}\n\n",
            b"event: message_start\ndata: " + json.dumps(start).encode() + b"\n\n",
            b'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}\n\n',
        ]
        async with _raw_server(pieces, []) as url, httpx2.AsyncClient() as http:
            client = sdk.AsyncAnthropic(api_key="k", base_url=url.removesuffix("/v1"), max_retries=0, http_client=http)
            stream = await post_stream(client, "/v1/messages", {"model": "m"}, cast_to=object, stream_cls=anthropic_event_stream(sdk))
            assert await stream.__anext__() == start
            with pytest.raises(sdk.APIStatusError) as info:
                await stream.__anext__()
            await stream.close()
        assert info.value.type == "overloaded_error"
        assert info.value.status_code == 200
