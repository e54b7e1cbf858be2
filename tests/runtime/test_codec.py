"""The wire codec: strict decoding, clear errors, bounded frames, round trips."""

from __future__ import annotations

import threading
import typing
from typing import Any

import attrs
import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

import messages
from messages.codec import (
    Codec,
    FrameBuffer,
    FrameTooLarge,
    InvalidJson,
    InvalidMessageFields,
    InvalidUtf8,
    MessageDecodeError,
    UnknownMessageType,
)
from messages.framing import FrameReader
from messages.untrusted import repair_json
from tests.strategies import hostile_frames, hostile_text, json_values, message_strategy


@attrs.frozen
class Ping:
    id: int
    text: str
    ratio: float = 1.0
    urgent: bool = False
    args: dict[str, Any] = attrs.Factory(dict)
    tags: list[str] = attrs.Factory(list)


@attrs.frozen
class Pong:
    id: int
    result: str | None = None


codec: Codec[Ping | Pong] = Codec(Ping | Pong, max_frame_bytes=256)


class TestDecodeErrors:
    """Every way a frame can be wrong has its own error and a clear text."""

    @pytest.mark.parametrize(
        ("frame", "error", "text"),
        [
            (b"\xff\xfe{}", InvalidUtf8, "not valid UTF-8"),
            (b'{"type": "Ping", ', InvalidJson, "not valid JSON"),
            (b"[1, 2]", InvalidJson, "must be a JSON object, got an array"),
            (b'"Ping"', InvalidJson, "got a string"),
            (b'{"id": 1}', UnknownMessageType, "unknown message type missing"),
            (b'{"type": "Boom", "id": 1}', UnknownMessageType, "'Boom' (expected one of: Ping, Pong)"),
            (b'{"type": 5}', UnknownMessageType, "unknown message type 5"),
            (b'{"type": "Ping", "id": 1}', InvalidMessageFields, "required field missing @ Ping.text"),
            (b'{"type": "Ping", "id": "12", "text": "x"}', InvalidMessageFields, "expected an integer, got a string @ Ping.id"),
            (b'{"type": "Ping", "id": 1, "text": 5}', InvalidMessageFields, "expected a string, got an integer @ Ping.text"),
            (b'{"type": "Ping", "id": 1, "text": "x", "urgent": "false"}', InvalidMessageFields, "expected true or false"),
            (b'{"type": "Ping", "id": true, "text": "x"}', InvalidMessageFields, "expected an integer, got a boolean"),
            (b'{"type": "Ping", "id": 1, "text": "x", "ratio": "1.5"}', InvalidMessageFields, "expected a number"),
            (b'{"type": "Ping", "id": 1, "text": "x", "tags": ["a", 2]}', InvalidMessageFields, "@ Ping.tags[1]"),
            (b'{"type": "Ping", "id": 1, "text": "x", "args": []}', InvalidMessageFields, "Ping.args"),
            (b'{"type": "Pong", "id": 1, "result": 3}', InvalidMessageFields, "Pong.result"),
            (b"x" * 300, FrameTooLarge, "exceeds the limit of 256 bytes"),
        ],
    )
    def test_bad_frame(self, frame: bytes, error: type[Exception], text: str) -> None:
        """The decoder raises the specific error, whose text says what and where."""
        with pytest.raises(error) as caught:
            codec.decode(frame)
        assert text in str(caught.value)

    def test_integer_is_a_valid_float(self) -> None:
        """A JSON integer fills a float field; nothing else is coerced."""
        assert codec.decode(b'{"type": "Ping", "id": 1, "text": "x", "ratio": 2}').ratio == 2.0


class TestFrameBuffer:
    """Splitting a byte stream into bounded frames."""

    def test_frames_split_across_reads(self) -> None:
        """Frames are reassembled whatever the read boundaries."""
        buffer = FrameBuffer(100)
        out: list[bytes] = []
        for chunk in (b'{"a":', b"1}\n{", b'"b":2}\n\n'):
            buffer.feed(chunk)
            out.extend(buffer.frames())
        assert out == [b'{"a":1}', b'{"b":2}', b""]

    def test_oversized_frame_is_skipped_and_the_stream_goes_on(self) -> None:
        """An oversized frame raises once; the next frame is read normally."""
        buffer = FrameBuffer(10)
        buffer.feed(b"y" * 25)
        with pytest.raises(FrameTooLarge):
            list(buffer.frames())
        buffer.feed(b"yyyy\nok\n")
        assert list(buffer.frames()) == [b"ok"]

    @given(st.lists(st.binary(max_size=14).map(lambda b: b.replace(b"\x00", b"\n")), max_size=8))
    def test_sole_frame_reads_as_feeding_does(self, reads: list[bytes]) -> None:
        """Taking sole frames first yields what feeding every read yields, oversized frames included."""

        def split(buffer: FrameBuffer, data: bytes) -> list[bytes | str]:
            out: list[bytes | str] = []
            buffer.feed(data)
            while True:
                try:
                    out.extend(buffer.frames())
                    return out
                except FrameTooLarge as exc:
                    out.append(f"too large: {exc.size}")

        fed, fast = FrameBuffer(6), FrameBuffer(6)
        by_feeding: list[bytes | str] = []
        by_sole: list[bytes | str] = []
        for data in reads:
            by_feeding += split(fed, data)
            sole = fast.sole_frame(data)
            by_sole += [sole] if sole is not None else split(fast, data)
        assert by_sole == by_feeding
        assert fast.pending_bytes == fed.pending_bytes

    async def test_frame_reader_over_a_real_socket_pair(self) -> None:
        """FrameReader yields frames from a socket and None at end of stream."""
        a, b = trio.socket.socketpair()
        reader = FrameReader(trio.SocketStream(b), max_frame_bytes=64)
        stream = trio.SocketStream(a)
        await stream.send_all(codec.encode(Pong(1)) + codec.encode(Pong(2, "r")))
        await stream.aclose()
        frames = [await reader.receive_frame(), await reader.receive_frame(), await reader.receive_frame()]
        assert [codec.decode(f) for f in frames[:2]] == [Pong(1), Pong(2, "r")]
        assert frames[2] is None
        b.close()


def _wire_message_classes() -> list[type]:
    """Every attrs class of every wire union declared in ``messages``."""
    classes: list[type] = []
    for union in messages.WIRE_UNIONS:
        classes.extend(typing.get_args(union) or (union,))
    return classes


class TestRoundTrip:
    """Every message of the project survives encode → decode unchanged."""

    @pytest.mark.parametrize("text", [None, hostile_text], ids=["text", "hostile-text"])
    @pytest.mark.parametrize("cls", _wire_message_classes(), ids=lambda c: c.__name__)
    @settings(max_examples=30, deadline=None)
    @given(data=st.data())
    def test_every_message_round_trips(self, cls: type, text: st.SearchStrategy[str] | None, data: st.DataObject) -> None:
        """decode(encode(m)) == m for generated instances of each wire message; with hostile
        strings, m with exactly its lone surrogates repaired."""
        union = next(u for u in messages.WIRE_UNIONS if cls in (typing.get_args(u) or (u,)))
        wire = Codec(union, max_frame_bytes=1 << 24)
        message = data.draw(message_strategy(cls, text=text))
        expected = message if text is None else wire.from_dict(repair_json(wire.to_dict(message)))
        assert expected == wire.decode(wire.encode(message))

    @given(st.builds(Ping, id=st.integers(-(2**63), 2**63 - 1), text=st.text(), args=st.dictionaries(st.text(), json_values)))
    def test_ping_round_trips(self, message: Ping) -> None:
        """A message with free-form JSON arguments round-trips exactly."""
        big = Codec(Ping | Pong, max_frame_bytes=1 << 24)
        assert big.decode(big.encode(message)) == message


class TestHostileFrames:
    """Hostile frames get a MessageDecodeError with a clear text; hostile text is repaired, not refused."""

    @pytest.mark.parametrize(
        ("frame", "error", "text"),
        [
            (b"[" * 100_000, InvalidJson, "frame is nested deeper than 100 levels"),
            (b'{"type": "Ping", "id": 1, "text": "x", "args": {"a": ' + b"[" * 5000 + b"]" * 5000 + b"}}",
             InvalidJson, "frame is nested deeper than 100 levels"),
            (b'{"type": "Ping", "id": ' + b"9" * 5000 + b', "text": "x"}', InvalidJson,
             "frame holds a number of more than 4300 digits"),
            (b'{"type": "Ping", "id": 9223372036854775808, "text": "x"}', InvalidMessageFields,
             "expected an integer that fits in 64 bits @ Ping.id"),
            (b'{"type": "Ping", "id": 1, "text": "x", "ratio": NaN}', InvalidJson, "NaN is not a JSON value"),
            (b'{"type": "Ping", "id": 1, "text": "\xed\xa0\x80"}', InvalidUtf8, "frame is not valid UTF-8 (byte 35)"),
        ],
    )
    def test_refused(self, frame: bytes, error: type[Exception], text: str) -> None:
        """Each is refused with its own error, never RecursionError or a bare ValueError."""
        big = Codec(Ping | Pong, max_frame_bytes=1 << 24)
        with pytest.raises(error) as caught:
            big.decode(frame)
        assert text in str(caught.value)

    def test_surrogates_are_repaired(self) -> None:
        """Escaped lone halves in any string, keys included, decode as U+FFFD."""
        frame = rb'{"type":"Ping","id":1,"text":"a\udc80","args":{"k\ud800":"\udfff"},"tags":["\ud83d"]}'
        assert Ping(1, "a\ufffd", args={"k\ufffd": "\ufffd"}, tags=["\ufffd"]) == codec.decode(frame)

    def test_encode_repairs_what_slipped_through(self) -> None:
        """A message holding a lone surrogate is still sent, as U+FFFD, instead of failing the connection."""
        assert Ping(1, "a\ufffd") == codec.decode(codec.encode(Ping(1, "a\udc80")))

    @settings(max_examples=200, deadline=None)
    @given(hostile_frames(b'{"type":"Ping","id":1,"text":"x","args":{"a":[1,{"b":null}]},"tags":["t"]}'))
    def test_decode_never_crashes(self, frame: bytes) -> None:
        """Whatever a hostile frame holds, decode returns a message or raises MessageDecodeError."""
        big = Codec(Ping | Pong, max_frame_bytes=1 << 24)
        try:
            message = big.decode(frame)
        except MessageDecodeError:
            return
        big.encode(message)

    async def test_reader_goes_on_after_invalid_utf8(self) -> None:
        """Over a real socket, a frame of invalid UTF-8 is refused alone; the frames after it decode."""
        a, b = trio.socket.socketpair()
        reader = FrameReader(trio.SocketStream(b), max_frame_bytes=256)
        stream = trio.SocketStream(a)
        await stream.send_all(b'{"type":"Pong","id":1,"result":"\xff\xfe"}\n' + codec.encode(Pong(2)))
        await stream.aclose()
        with pytest.raises(InvalidUtf8):
            codec.decode(await reader.receive_frame() or b"")
        assert Pong(2) == codec.decode(await reader.receive_frame() or b"")
        b.close()


@attrs.frozen
class Hello:
    id: int
    name: str


@attrs.frozen
class Goodbye:
    id: int
    reason: str = ""


class TestSharedHooks:
    """Codecs of one union share its hooks, built per member when first met, safely from many threads."""

    def test_codecs_of_one_union_share_their_hooks(self):
        assert Codec(Ping | Pong)._hooks is codec._hooks
        assert Codec(Ping | Pong, max_frame_bytes=10).max_frame_bytes == 10  # the limit stays the codec's own

    def test_threads_decoding_a_new_unions_first_frames_at_once(self):
        fresh: Codec[Hello | Goodbye] = Codec(Hello | Goodbye)
        frames = [fresh.encode(Hello(i, f"n{i}")) if i % 2 else fresh.encode(Goodbye(i, "bye")) for i in range(64)]
        barrier = threading.Barrier(8)
        results: list[list[Any]] = [[] for _ in range(8)]

        def decode_all(slot: int) -> None:
            decoder: Codec[Hello | Goodbye] = Codec(Hello | Goodbye)
            barrier.wait()
            results[slot] = [decoder.decode(frame) for frame in frames]

        threads = [threading.Thread(target=decode_all, args=(slot,)) for slot in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        expected = [Hello(i, f"n{i}") if i % 2 else Goodbye(i, "bye") for i in range(64)]
        assert all(got == expected for got in results)
