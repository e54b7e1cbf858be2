"""A Chrome DevTools Protocol connection over ``--remote-debugging-pipe``.

Chromium reads commands on its descriptor 3 and writes replies and events on its descriptor 4, each
message one JSON object followed by a NUL byte. One task (:meth:`CdpConnection.serve`) reads the pipe
and hands each reply to the command waiting for it and each event to whoever listens for it; commands
are sent from any task. A pipe rather than a port: it needs no network at all, so it works inside a jail
that has none (``sandbox.network: false``), and no other process can reach the browser.

Flat sessions (``Target.attachToTarget`` with ``flatten``) carry a page's commands on the same pipe,
told apart by ``sessionId``.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable
from typing import Any

import attrs
import trio

from tools.browser.errors import CdpError

__all__ = ["CdpConnection", "EventHandler", "Posted"]

log = logging.getLogger(__name__)

EventHandler = Callable[[str, dict[str, Any], str | None], None]
"""Called with an event's method, its params and its session id (None for the browser's own)."""

# The largest message read: a full-page screenshot is a few MB of base64.
_MAX_MESSAGE = 64 * 1024 * 1024
_READ_SIZE = 256 * 1024


@attrs.frozen
class Posted:
    """A command sent and not answered yet (see :meth:`CdpConnection.post`)."""

    command_id: int
    method: str
    reply: trio.MemoryReceiveChannel[dict[str, Any]]


class CdpConnection:
    """Commands and events over Chromium's debugging pipe.

    Args:
        send_stream: our end of the pipe Chromium reads (its fd 3).
        receive_stream: our end of the pipe Chromium writes (its fd 4).
        on_event: called for every event, in the reading task (it must not block).
    """

    def __init__(self, send_stream: trio.abc.SendStream, receive_stream: trio.abc.ReceiveStream, on_event: EventHandler) -> None:
        self._send_stream = send_stream
        self._receive_stream = receive_stream
        self._on_event = on_event
        self._next_id = 0
        self._waiting: dict[int, trio.MemorySendChannel[dict[str, Any]]] = {}
        self._send_lock = trio.Lock()
        self._closed: str | None = None

    @property
    def closed(self) -> str | None:
        """Why the connection is closed, or None while it is open."""
        return self._closed

    async def send(
        self, method: str, params: dict[str, Any] | None = None, *, session_id: str | None = None,
        timeout: float = math.inf,
    ) -> dict[str, Any]:
        """Send one command and return its result.

        Raises:
            CdpError: the browser answered with an error, did not answer in ``timeout`` seconds, or its
                pipe closed.
        """
        return await self.result(await self.post(method, params, session_id=session_id), timeout=timeout)

    async def post(self, method: str, params: dict[str, Any] | None = None, *, session_id: str | None = None) -> Posted:
        """Send one command without waiting for its answer (:meth:`result` waits): a page held at its start
        answers some commands only once it runs, so those are posted, then the page is let run.

        Raises:
            CdpError: the pipe is closed.
        """
        if self._closed is not None:
            raise CdpError(f"The browser is gone ({self._closed}).")
        self._next_id += 1
        command_id = self._next_id
        message: dict[str, Any] = {"id": command_id, "method": method, "params": params or {}}
        if session_id is not None:
            message["sessionId"] = session_id
        send_reply, receive_reply = trio.open_memory_channel[dict[str, Any]](1)
        self._waiting[command_id] = send_reply
        try:
            async with self._send_lock:
                await self._send_stream.send_all(json.dumps(message).encode() + b"\0")
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            self._waiting.pop(command_id, None)
            raise CdpError(f"The browser is gone ({self._closed or exc}).") from None
        except BaseException:
            self._waiting.pop(command_id, None)
            raise
        return Posted(command_id, method, receive_reply)

    async def result(self, posted: Posted, *, timeout: float = math.inf) -> dict[str, Any]:
        """The answer to a posted command.

        Raises:
            CdpError: as :meth:`send`.
        """
        try:
            with trio.move_on_after(timeout) as waited:
                reply = await posted.reply.receive()
            if waited.cancelled_caught:
                raise CdpError(f"The browser did not answer {posted.method} within {timeout:g} s.")
        except trio.EndOfChannel:
            raise CdpError(f"The browser is gone ({self._closed}).") from None
        finally:
            self._waiting.pop(posted.command_id, None)
        if "error" in reply:
            error = reply["error"]
            raise CdpError(f"{posted.method} failed: {error.get('message', error)}")
        result: dict[str, Any] = reply.get("result", {})
        return result

    async def serve(self) -> None:
        """Read the pipe until it closes, answering waiting commands and passing events on."""
        buffer = bytearray()
        try:
            while True:
                data = await self._receive_stream.receive_some(_READ_SIZE)
                if not data:
                    break
                buffer += data
                if len(buffer) > _MAX_MESSAGE:
                    raise CdpError("The browser sent a message larger than 64 MB.")
                while (end := buffer.find(b"\0")) >= 0:
                    raw = bytes(buffer[:end])
                    del buffer[: end + 1]
                    self._dispatch(raw)
        finally:
            self._close("its pipe closed")

    def _dispatch(self, raw: bytes) -> None:
        try:
            message = json.loads(raw)
        except ValueError:
            log.warning("browser: a message that is not JSON was dropped (%d bytes)", len(raw))
            return
        if "id" in message:
            waiting = self._waiting.pop(message["id"], None)
            if waiting is not None:
                waiting.send_nowait(message)
            return
        method = message.get("method")
        if isinstance(method, str):
            self._on_event(method, message.get("params") or {}, message.get("sessionId"))

    def _close(self, reason: str) -> None:
        if self._closed is None:
            self._closed = reason
        for waiting in self._waiting.values():
            waiting.close()
        self._waiting.clear()
