"""Many concurrent requests over raw loopback sockets, each one's fate told apart: an HTTP answer
(its status and ``Retry-After``), a reset, a close without an answer, or a refused connection.

An HTTP client library folds those fates into a few exception types and may retry; here each
request is one connection, one ``h11`` exchange and nothing else, so a reset is seen as a reset.
Shared by ``tests/api/test_overload.py`` and ``bench/bench_api_overload.py``.
"""

from __future__ import annotations

import collections
import errno
import json
from collections.abc import Mapping

import attrs
import h11
import trio

__all__ = ["CLOSED", "REFUSED", "RESET", "UNFINISHED", "Fate", "fire", "post_once", "tally"]

#: How a request without an HTTP answer ended.
RESET = "reset"
CLOSED = "closed without an answer"
REFUSED = "connection refused"
UNFINISHED = "unfinished at the deadline"


@attrs.frozen
class Fate:
    """What became of one request.

    Attributes:
        status: the response's status; None when none came.
        retry_after: its ``Retry-After`` header, None when absent.
        failure: how a request without an answer ended (``reset``, ...); None when answered.
    """

    status: int | None = None
    retry_after: str | None = None
    failure: str | None = None

    @property
    def label(self) -> str:
        """The status as text, or the failure."""
        return str(self.status) if self.status is not None else str(self.failure)


def _request(host: str, port: int, path: str, body: bytes, headers: Mapping[str, str]) -> list[h11.Event]:
    fields = [("Host", f"{host}:{port}"), ("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
    fields += list(headers.items())
    return [h11.Request(method="POST", target=path, headers=fields), h11.Data(data=body), h11.EndOfMessage()]


def _is_reset(exc: BaseException) -> bool:
    cause = exc if isinstance(exc, OSError) else exc.__cause__
    return isinstance(cause, OSError) and cause.errno in (errno.ECONNRESET, errno.EPIPE)


async def post_once(host: str, port: int, path: str, payload: object, headers: Mapping[str, str]) -> Fate:
    """POST ``payload`` as JSON on a fresh connection; the response's status, or how it failed."""
    conn = h11.Connection(h11.CLIENT)
    try:
        stream = await trio.open_tcp_stream(host, port)
    except OSError as exc:
        return Fate(failure=REFUSED if exc.errno == errno.ECONNREFUSED else f"connect: {exc}")
    async with stream:
        try:
            for event in _request(host, port, path, json.dumps(payload).encode(), headers):
                await stream.send_all(conn.send(event) or b"")
            # The whole response is read: closing with its body unread would make this side reset the connection.
            response: h11.Response | None = None
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    conn.receive_data(await stream.receive_some(65536))
                elif isinstance(event, h11.Response):
                    response = event
                elif isinstance(event, h11.EndOfMessage) and response is not None:
                    retry = dict(response.headers).get(b"retry-after")  # h11 gives names in lower case
                    return Fate(status=response.status_code, retry_after=retry.decode() if retry is not None else None)
                elif isinstance(event, h11.ConnectionClosed):
                    return Fate(failure=CLOSED)
        except (trio.BrokenResourceError, OSError) as exc:
            return Fate(failure=RESET if _is_reset(exc) else f"{type(exc).__name__}: {exc}")
        except h11.RemoteProtocolError:
            return Fate(failure=CLOSED)


async def fire(
    host: str, port: int, path: str, payload: object, headers: Mapping[str, str], count: int, deadline: float
) -> list[Fate]:
    """``count`` requests at once (each on its own connection); a request still open after
    ``deadline`` seconds is :data:`UNFINISHED`."""
    fates: list[Fate] = []

    async def one() -> None:
        fates.append(await post_once(host, port, path, payload, headers))

    with trio.move_on_after(deadline):
        async with trio.open_nursery() as nursery:
            for _ in range(count):
                nursery.start_soon(one)
    return fates + [Fate(failure=UNFINISHED)] * (count - len(fates))


def tally(fates: list[Fate]) -> collections.Counter[str]:
    """How many requests ended each way (``"200"``, ``"429"``, ``"reset"`` ...)."""
    return collections.Counter(fate.label for fate in fates)
