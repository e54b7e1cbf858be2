"""The HTTP client every platform adapter sends through: a request made again only when it surely never
reached the platform, so that an answer is neither lost to a dropped connection nor sent twice.

What is made again, and why it is safe:

- a connection refused or timed out: httpx2's own transport does it (``retries=``: at once, then after
  0.5 s); each try is logged here;
- a request not all written when its connection failed: no server acts on half a request;
- a request all written to a connection opened for it, failed before any byte of an answer, when the
  platform's side acknowledged none of its bytes (Linux's ``TCP_INFO``): no program there read it. This is
  a listen queue overflowing (the kernel resets a connection it never handed to the server) or a front end
  resetting a connection it never took;
- an idempotent request (``GET``, ``HEAD``, ``OPTIONS``, ``PUT``, ``DELETE``, RFC 9110 9.2.2), failed
  before any byte of an answer: doing it twice is doing it once. Matrix sends with ``PUT`` under a
  transaction id, which the homeserver keeps, so its sends qualify.

Anything else is not made again: a ``POST`` whose bytes the platform acknowledged may have been acted on
(Telegram's ``sendMessage``, Discord's and Mattermost's posts, Slack's ``chat.postMessage``, Signal's
``/v2/send``, Graph's ``messages`` keep no idempotency key here), so its failure goes up to the adapter as
before (logged with the chat, the reply reported or queued). A timeout waiting for an answer is never made
again either (the platform may be acting slowly). A pooled keep-alive connection that the platform closed
while idle is dropped by httpx2 itself before use; one closed while our request was on its way cannot be
told apart from a platform that read it and fell over, so only an idempotent request is made again then.

Log lines name the method and the host, never the path (Telegram's token and webhooks' secrets live there).
"""

from __future__ import annotations

import logging
import socket
import struct
from collections.abc import Awaitable, Callable
from typing import Any

import httpx2
import trio

__all__ = ["ATTEMPTS", "CONNECT_RETRIES", "FIRST_PAUSE", "IDEMPOTENT_METHODS", "SafeRetryTransport", "platform_client"]

log = logging.getLogger("hermes_actors.gateway.send")

#: Times httpx2 opens a refused or timed-out connection again (its own backoff: 0 s, 0.5 s).
CONNECT_RETRIES = 2
#: Times one request is made when it surely never reached the platform.
ATTEMPTS = 3
#: The first pause before a request is made again (doubled each time).
FIRST_PAUSE = 0.25
#: Methods whose repetition has the effect of one request (RFC 9110 9.2.2).
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
#: Failures of a connection (a timeout waiting for an answer is not one: the platform may be acting).
_BROKEN = (httpx2.ReadError, httpx2.WriteError, httpx2.RemoteProtocolError, httpx2.WriteTimeout)
#: ``struct tcp_info``'s ``tcpi_bytes_acked`` (Linux 4.2+): a u64 at byte 120.
_BYTES_ACKED = 120

Trace = Callable[[str, dict[str, Any]], Awaitable[None]]


def platform_client(transport: SafeRetryTransport | None = None, **client: Any) -> httpx2.AsyncClient:
    """An ``httpx2.AsyncClient`` (``client`` its arguments: headers, timeout) sending through ``transport``
    (a :class:`SafeRetryTransport` with the defaults unless given, to read its count).

    It is mounted for every address rather than passed as the client's transport, which would make httpx2
    ignore ``HTTPS_PROXY`` and its kind: a proxy named there is still used (through httpx2's own transport,
    as before; a reset would speak of the proxy, not of the platform)."""
    return httpx2.AsyncClient(mounts={"all://": transport or SafeRetryTransport()}, **client)


def _acked(sock: Any) -> int | None:
    """The bytes of ours the peer's TCP acknowledged on ``sock``, or None where the kernel does not say."""
    if sock is None or not hasattr(socket, "TCP_INFO"):
        return None
    try:
        raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    except OSError:
        return None
    return struct.unpack_from("Q", raw, _BYTES_ACKED)[0] if len(raw) >= _BYTES_ACKED + 8 else None


class _Evidence:
    """What one attempt's httpcore trace showed: a connection opened for it, the request all written, and
    the peer's acknowledged bytes when the request began and when the answer failed."""

    def __init__(self, outer: Trace | None) -> None:
        self.outer = outer
        self.socket: Any = None
        self.written = False
        self.acked_at_start: int | None = None
        self.acked_at_failure: int | None = None
        self.connect_retries = 0

    async def __call__(self, name: str, info: dict[str, Any]) -> None:
        if name == "connection.connect_tcp.complete":
            self.socket = info["return_value"].get_extra_info("socket")
        elif name == "connection.retry.started":  # httpx2 is about to open a refused connection again
            self.connect_retries += 1
            log.warning("send to %s: could not connect; opening the connection again", info.get("host", "?"))
        elif name == "http11.send_request_headers.started":
            self.acked_at_start = _acked(self.socket)
        elif name == "http11.send_request_body.complete":
            self.written = True
        elif name == "http11.receive_response_headers.failed":
            self.acked_at_failure = _acked(self.socket)
        if self.outer is not None:
            await self.outer(name, info)

    def unsent(self, request: httpx2.Request, exc: httpx2.TransportError) -> str | None:
        """Why the failed attempt surely had no effect on the platform, or None when it may have had one."""
        if not isinstance(exc, _BROKEN):
            return None
        if not self.written:
            return "the request was not all written"
        if self.acked_at_start is not None and self.acked_at_failure == self.acked_at_start:
            return "the platform took none of it"
        if request.method in IDEMPOTENT_METHODS:
            return "no answer to an idempotent request"
        return None


class SafeRetryTransport(httpx2.AsyncBaseTransport):
    """httpx2's transport (connections retried by its ``retries=``), and a request made again, after a
    short doubling pause on Trio's clock, only when it surely never reached the platform (see the module).

    Args:
        attempts: times one request is made at most.
        first_pause: the first pause before it is made again.

    Attributes:
        retried: requests made again (connections opened again included), for the adapters' snapshots.
    """

    def __init__(self, *, attempts: int = ATTEMPTS, first_pause: float = FIRST_PAUSE) -> None:
        self._inner = httpx2.AsyncHTTPTransport(retries=CONNECT_RETRIES)
        self._attempts = attempts
        self._first_pause = first_pause
        self.retried = 0

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """Send ``request``; its response.

        Raises:
            httpx2.TransportError: the last attempt's failure, or the first one that may have reached the
                platform.
        """
        outer = request.extensions.get("trace")
        pause = self._first_pause
        for attempt in range(1, self._attempts + 1):
            evidence = _Evidence(outer)
            request.extensions = {**request.extensions, "trace": evidence}
            try:
                return await self._inner.handle_async_request(request)
            except httpx2.TransportError as exc:
                why = evidence.unsent(request, exc) if _replayable(request) else None
                if why is None or attempt == self._attempts:
                    raise
                self.retried += 1
                log.warning(
                    "send %s %s: %s (%s); trying again in %.2f s (attempt %d of %d)",
                    request.method, request.url.host, why, type(exc).__name__, pause, attempt + 1, self._attempts,
                )
                await trio.sleep(pause)
                pause *= 2
            finally:
                self.retried += evidence.connect_retries
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def aclose(self) -> None:
        await self._inner.aclose()


def _replayable(request: httpx2.Request) -> bool:
    """Whether the body can be sent again: bytes (JSON, a form) or a multipart of bytes, never a one-shot
    stream (those are only async, or only sync)."""
    return isinstance(request.stream, httpx2.SyncByteStream) and isinstance(request.stream, httpx2.AsyncByteStream)
