"""The front's connections to one session host: a shared link for requests, and one per attachment.

Both speak the control protocol over the host's Unix socket (0600 in the 0700 ``run/hosts``, so only
this uid reaches it; the host checks the peer's uid as the control socket does). Requests from every
client share one link: each goes out under an id of the link's own, and its reply comes back under the
client's id, so any number may be in flight at once. An attachment has a link of its own, whose
frames the front passes on to the client as they are, never decoded.
"""

from __future__ import annotations

import itertools
import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import trio

from control.errors import RequestFailed
from messages import control as c
from messages.codec import Codec, MessageDecodeError
from messages.framing import FrameReader

__all__ = ["AttachLink", "HostLink", "HostUnavailable", "open_host_stream"]

log = logging.getLogger("hermes_actors.hosts")

#: The largest frame a host may send the front (events can be large: a tool's whole output).
REPLY_FRAME_LIMIT = 256 * 1024 * 1024
#: How much one read of an attachment's link takes at most.
_READ_SIZE = 65536
#: How long connecting to a host and its welcome may take.
CONNECT_SECONDS = 10.0

#: The control protocol's codecs: what the front sends a host, and what the host answers.
_Encoder = Codec[c.ClientMessage]
_Decoder = Codec[c.DaemonMessage]


class HostUnavailable(RequestFailed):
    """The host is not running, or went away with the request unanswered."""

    def __init__(self, message: str) -> None:
        super().__init__("unavailable", message)


async def open_host_stream(socket: Path, encoder: _Encoder, decoder: _Decoder) -> tuple[trio.SocketStream, FrameReader]:
    """A connection to the host listening at ``socket``, said hello to and welcomed.

    Raises:
        HostUnavailable: it cannot be reached, or does not welcome us.
    """
    try:
        with trio.fail_after(CONNECT_SECONDS):
            stream = await trio.open_unix_socket(os.fspath(socket))
    except (OSError, trio.TooSlowError) as exc:
        raise HostUnavailable(f"the session host at {socket} cannot be reached: {exc}") from exc
    reader = FrameReader(stream, REPLY_FRAME_LIMIT)
    try:
        with trio.fail_after(CONNECT_SECONDS):
            await stream.send_all(encoder.encode(c.Hello(c.PROTOCOL_VERSION, "hermes-actors front", os.getpid())))
            frame = await reader.receive_frame()
        welcome = decoder.decode(frame) if frame is not None else None
    except (OSError, trio.TooSlowError, trio.BrokenResourceError, MessageDecodeError) as exc:
        await stream.aclose()
        raise HostUnavailable(f"the session host at {socket} did not welcome us: {exc}") from exc
    if not isinstance(welcome, c.Welcome):
        await stream.aclose()
        raise HostUnavailable(f"the session host at {socket} did not welcome us: {welcome!r}")
    return stream, reader


@attrs.define
class _Pending:
    """A request on the shared link, waiting for its reply."""

    client_id: str
    done: trio.Event = attrs.Factory(trio.Event)
    reply: Any = None


class HostLink:
    """The shared request link to one host; ``serve`` (run by the host's actor) reads its replies.

    Args:
        stream, reader: the welcomed connection (``open_host_stream``).
        encoder, decoder: the control protocol's codecs, client to daemon and back.
        name: the host's name, for errors.
    """

    def __init__(
        self, stream: trio.SocketStream, reader: FrameReader, encoder: _Encoder, decoder: _Decoder, name: str
    ) -> None:
        self._stream = stream
        self._reader = reader
        self._encoder = encoder
        self._decoder = decoder
        self._name = name
        self._ids = itertools.count(1)
        self._pending: dict[str, _Pending] = {}
        self._send_lock = trio.Lock()
        self._closed: str | None = None
        self.requests = 0

    async def request(self, message: c.ClientRequest) -> Any:
        """Send ``message`` to the host; its reply (an ``ErrorReply`` included), under the message's id.

        Raises:
            HostUnavailable: the link is closed, or closes before the reply.
        """
        if self._closed is not None:
            raise HostUnavailable(self._closed)
        wire_id = f"front-{next(self._ids)}"
        pending = _Pending(message.request_id)
        self._pending[wire_id] = pending
        try:
            frame = self._encoder.encode(attrs.evolve(message, request_id=wire_id))
            try:
                async with self._send_lock:
                    await self._stream.send_all(frame)
            except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                raise HostUnavailable(f"{self._name} went away: {exc}") from exc
            await pending.done.wait()
        finally:
            del self._pending[wire_id]
        if pending.reply is None:
            raise HostUnavailable(self._closed or f"{self._name} went away")
        self.requests += 1
        return attrs.evolve(pending.reply, request_id=pending.client_id)

    async def serve(self) -> None:
        """Read replies and hand each to its request, until the host closes the link."""
        try:
            while (frame := await self._reader.receive_frame()) is not None:
                try:
                    reply = self._decoder.decode(frame)
                except MessageDecodeError as exc:
                    # Cannot be matched to a request: its caller times out as for a silent host.
                    log.error("%s sent a frame the front cannot decode: %s", self._name, exc)
                    continue
                pending = self._pending.get(getattr(reply, "request_id", None) or "")
                if pending is not None:
                    pending.reply = reply
                    pending.done.set()
        except (trio.BrokenResourceError, trio.ClosedResourceError, MessageDecodeError):
            pass
        finally:
            self.close(f"{self._name} closed its link")

    def close(self, reason: str) -> None:
        """Refuse new requests and fail the waiting ones with ``reason``."""
        if self._closed is None:
            self._closed = reason
        for pending in self._pending.values():
            pending.done.set()
        self._stream.socket.close()


class AttachLink:
    """A link of its own for one attachment: its frames are relayed to the client untouched."""

    def __init__(self, stream: trio.SocketStream, reader: FrameReader, encoder: _Encoder, decoder: _Decoder) -> None:
        self._stream = stream
        self._reader = reader
        self._encoder = encoder
        self._decoder = decoder

    @classmethod
    @asynccontextmanager
    async def open(cls, socket: Path, encoder: _Encoder, decoder: _Decoder) -> AsyncIterator[AttachLink]:
        """A welcomed connection to the host at ``socket``, closed at the end of the block."""
        stream, reader = await open_host_stream(socket, encoder, decoder)
        async with stream:
            yield cls(stream, reader, encoder, decoder)

    async def attach(self, request: c.Attach) -> Any:
        """Send ``request``; the host's reply to it (``Attached`` or an error)."""
        try:
            await self._stream.send_all(self._encoder.encode(request))
            while (frame := await self._reader.receive_frame()) is not None:
                reply = self._decoder.decode(frame)
                if getattr(reply, "request_id", None) == request.request_id:
                    return reply
        except (trio.BrokenResourceError, trio.ClosedResourceError, MessageDecodeError) as exc:
            raise HostUnavailable(f"the session host went away: {exc}") from exc
        raise HostUnavailable("the session host closed the link")

    async def frames(self) -> AsyncIterator[bytes]:
        """The host's frames for the client, as they come: each chunk is whole frames (newlines
        included), as many as one read brought, until the host closes the link. They are never split
        or decoded here: the client's codec reads them."""
        pending = self._reader.take_buffered()
        try:
            while True:
                end = pending.rfind(b"\n") + 1
                if end:
                    yield pending[:end]
                    pending = pending[end:]
                if len(pending) > REPLY_FRAME_LIMIT:
                    return  # a host never sends this; the client is told its host went away
                data = await self._stream.receive_some(_READ_SIZE)
                if not data:
                    return
                pending += data
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return
