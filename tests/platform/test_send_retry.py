"""The adapters' shared HTTP transport against real loopback servers: a send that surely never reached
the platform (a refused connection, a connection reset before the platform took it) arrives, exactly
once; a send the platform read is never made twice unless it is idempotent (Matrix's ``PUT`` under a
transaction id)."""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import httpx2
import pytest
import trio
import trio.testing

from actors.platform.gateway.transport import CONNECT_RETRIES, platform_client
from actors.platform.matrix.client import MatrixClient
from actors.platform.telegram.bot_api import BotApi, TelegramError

TOKEN = "123:SECRET-TOKEN"
Trace = Callable[[str, dict[str, Any]], Awaitable[None]]


class Front:
    """A platform's front end on 127.0.0.1: it records each request it read (method, path, JSON body) and
    answers it, or reads it and closes the connection unanswered while ``drop`` is above 0.

    Args:
        answer: the JSON answer to a request's path.
    """

    def __init__(self, answer: Callable[[str], Any]) -> None:
        self.answer = answer
        self.port = _free_port()
        self.got: list[tuple[str, str, Any]] = []
        self.drop = 0

    async def listen(self, nursery: trio.Nursery) -> None:
        """Listen on :attr:`port` now and serve in ``nursery``."""
        sock = trio.socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        await sock.bind(("127.0.0.1", self.port))
        sock.listen(16)
        nursery.start_soon(trio.serve_listeners, self._serve, [trio.SocketListener(sock)])

    async def _serve(self, stream: trio.SocketStream) -> None:
        async with stream:
            data = b""
            while True:
                while b"\r\n\r\n" not in data:
                    chunk = await stream.receive_some()
                    if not chunk:
                        return
                    data += chunk
                head, data = data.split(b"\r\n\r\n", 1)
                method, path = head.split(b" ")[:2]
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), 0)
                while len(data) < length:
                    data += await stream.receive_some()
                body, data = data[:length], data[length:]
                self.got.append((method.decode(), path.decode(), json.loads(body) if body else None))
                if self.drop:
                    self.drop -= 1
                    return  # read, perhaps acted on, and the connection closed before an answer
                reply = json.dumps(self.answer(path.decode())).encode()
                await stream.send_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (len(reply), reply))


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _tracing(trace: Trace) -> httpx2.AsyncClient:
    """A platform client whose every request carries ``trace`` (httpcore's events), to act at a moment."""

    async def attach(request: httpx2.Request) -> None:
        request.extensions = {**request.extensions, "trace": trace}

    return platform_client(event_hooks={"request": [attach]}, timeout=None)


def _telegram_answer(path: str) -> Any:
    return {"ok": True, "result": {"message_id": 1}}


class TestNeverReached:
    """A send the platform never got is made again and arrives once; each retry is logged without the token."""

    async def test_refused_connection(self, autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture) -> None:
        front = Front(_telegram_answer)
        async with trio.open_nursery() as nursery:

            async def trace(name: str, info: dict[str, Any]) -> None:
                if name == "connection.retry.started" and not front.got:
                    await front.listen(nursery)  # the platform comes up while httpx2 waits to connect again

            with caplog.at_level(logging.WARNING, "hermes_actors.gateway.send"):
                async with _tracing(trace) as client:
                    await BotApi(f"http://127.0.0.1:{front.port}", TOKEN, client).call("sendMessage", chat_id=1, text="the answer")
            nursery.cancel_scope.cancel()
        assert front.got == [("POST", f"/bot{TOKEN}/sendMessage", {"chat_id": 1, "text": "the answer"})]
        assert "could not connect" in caplog.text and TOKEN not in caplog.text

    async def test_reset_before_the_platform_took_it(
        self, autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture,
    ) -> None:
        """The connection is in the listen queue, never accepted, when the front end drops its queue (as a
        kernel resets what overflows it): the POST never reached a program, so it is sent again."""
        front = Front(_telegram_answer)
        queue = socket.socket()
        queue.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        queue.bind(("127.0.0.1", front.port))
        queue.listen(4)  # never accepted
        async with trio.open_nursery() as nursery:

            async def trace(name: str, info: dict[str, Any]) -> None:
                if name == "connection.connect_tcp.complete" and queue.fileno() != -1:
                    queue.close()  # the queued connection is reset before a byte of the request is sent
                    await front.listen(nursery)

            with caplog.at_level(logging.WARNING, "hermes_actors.gateway.send"):
                async with _tracing(trace) as client:
                    await BotApi(f"http://127.0.0.1:{front.port}", TOKEN, client).call("sendMessage", chat_id=1, text="the answer")
            nursery.cancel_scope.cancel()
        assert [text for _, _, text in front.got] == [{"chat_id": 1, "text": "the answer"}]
        assert "trying again in 0.25 s (attempt 2 of 3)" in caplog.text and TOKEN not in caplog.text

    async def test_gives_up_to_the_adapter(self, autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture) -> None:
        """Nothing listens: httpx2 connects again CONNECT_RETRIES times, then the adapter's own error."""
        with caplog.at_level(logging.WARNING, "hermes_actors.gateway.send"):
            async with platform_client(timeout=None) as client:
                with pytest.raises(TelegramError, match=r"no answer \(ConnectError\)"):
                    await BotApi(f"http://127.0.0.1:{_free_port()}", TOKEN, client).call("sendMessage", chat_id=1, text="x")
        assert caplog.text.count("could not connect") == CONNECT_RETRIES


class TestMayHaveReached:
    """A send the platform read is not made again when doing it twice could post twice."""

    async def test_post_read_then_dropped_is_not_repeated(self, autojump_clock: trio.testing.MockClock) -> None:
        front = Front(_telegram_answer)
        front.drop = 1
        async with trio.open_nursery() as nursery:
            await front.listen(nursery)
            async with platform_client(timeout=None) as client:
                with pytest.raises(TelegramError, match=r"no answer \(RemoteProtocolError\)"):
                    await BotApi(f"http://127.0.0.1:{front.port}", TOKEN, client).call("sendMessage", chat_id=1, text="once")
            nursery.cancel_scope.cancel()
        assert len(front.got) == 1

    async def test_matrix_put_is_repeated_under_its_transaction(self, autojump_clock: trio.testing.MockClock) -> None:
        """Matrix keeps a transaction id: the same PUT again posts nothing new, so it may be repeated."""
        events: dict[str, str] = {}

        def answer(path: str) -> Any:
            return {"event_id": events.setdefault(path, f"$event{len(events)}")}  # the homeserver's dedup by txn

        front = Front(answer)
        front.drop = 1
        async with trio.open_nursery() as nursery:
            await front.listen(nursery)
            async with platform_client(timeout=None) as client:
                matrix = MatrixClient(f"http://127.0.0.1:{front.port}", TOKEN, client)
                assert await matrix.send("!room:x", "m.room.message", {"body": "once"}) == "$event0"
            nursery.cancel_scope.cancel()
        assert [method for method, _, _ in front.got] == ["PUT", "PUT"] and front.got[0][1] == front.got[1][1]
        assert len(events) == 1


class TestProxy:
    """A proxy named in the environment is still used for the platform's sends."""

    async def test_http_proxy_from_the_environment(self, monkeypatch: pytest.MonkeyPatch) -> None:
        front = Front(_telegram_answer)  # the proxy: it sees the absolute address
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{front.port}")
        for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "http_proxy"):
            monkeypatch.delenv(name, raising=False)
        async with trio.open_nursery() as nursery:
            await front.listen(nursery)
            async with platform_client(timeout=None) as client:
                await BotApi("http://api.telegram.invalid", TOKEN, client).call("sendMessage", chat_id=1, text="via the proxy")
            nursery.cancel_scope.cancel()
        assert [path for _, path, _ in front.got] == [f"http://api.telegram.invalid/bot{TOKEN}/sendMessage"]
