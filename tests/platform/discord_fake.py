"""A fake Discord on loopback: the REST API and the Gateway's websocket, as documented.

REST (``/api/v10``, ``Authorization: Bot <TOKEN>``): ``GET /gateway/bot``; ``POST
/channels/{id}/messages`` (JSON, or multipart with ``payload_json`` and ``files[n]``), with rate-limit
headers from a bucket the test sizes, and a 429 to whoever ignores them; ``PATCH`` of a message;
``POST .../typing``; interaction callbacks; attachments served at ``/attachments/NAME``.

The Gateway (a trio-websocket server in its own thread): HELLO, IDENTIFY → READY, heartbeats → ACK,
RESUME → the events sent since the given sequence, then RESUMED. Events the test pushes are numbered
and kept in the session's log, so a client that was away gets them on resume. The test can drop the
connection, ask for a reconnect (op 7), or stop acknowledging heartbeats.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import unquote

import trio
from trio_websocket import (
    ConnectionClosed,
    WebSocketConnection,
    WebSocketRequest,
)

from tests.platform.fake_http import FakeHandler, FakePlatform, parse_multipart, serving
from tests.platform.fake_ws import serving_websocket

TOKEN = "discord.TEST-token-never-logged"
BOT_ID = "900000000000000001"
_MESSAGES = re.compile(r"^/api/v10/channels/(\d+)/messages$")
_MESSAGE = re.compile(r"^/api/v10/channels/(\d+)/messages/(\d+)$")
_TYPING = re.compile(r"^/api/v10/channels/(\d+)/typing$")
_REACTION = re.compile(r"^/api/v10/channels/(\d+)/messages/(\d+)/reactions/([^/]+)/@me$")
_CALLBACK = re.compile(r"^/api/v10/interactions/(\w+)/([\w.-]+)/callback$")


class FakeDiscord(FakePlatform):
    """The fake's state; ``api_url`` and ``gateway_url`` once started."""

    def __init__(self) -> None:
        super().__init__()
        self.edits: list[dict[str, Any]] = []
        self.reactions: list[tuple[str, str, str]] = []  # (PUT or DELETE, message id, emoji) the bot sent
        self.callbacks: list[dict[str, Any]] = []
        self.typing = 0
        self.files: dict[str, bytes] = {}
        self.failures: list[tuple[int, dict[str, Any]]] = []
        self.bucket_size, self.bucket_window = 50, 1.0
        self._bucket: tuple[int, float] = (50, 0.0)
        self.violations = 0
        self.next_id = 5000
        self.api_url = self.gateway_url = self.base = ""
        # The Gateway: its session, the events' log, the connection, counters.
        self.session_id = "fake-session-1"
        self.seq = 0
        self.log: list[dict[str, Any]] = []
        self.identifies = self.resumes = self.heartbeats = 0
        self.ack_heartbeats = True
        self.heartbeat_interval_ms = 1000
        self.connection: WebSocketConnection | None = None
        self.trio_token: trio.lowlevel.TrioToken | None = None

    # -- what the test does ---------------------------------------------------------------------

    def push_message(self, channel: str, user: str, content: str, *, guild: bool = False, mention: bool = False, **extra: Any) -> str:
        """A user's message in a DM channel, or a guild channel (mentioning the bot when ``mention``); its id."""
        data = {
            "id": self._new_id(), "channel_id": channel, "content": f"<@{BOT_ID}> {content}" if mention else content,
            "author": {"id": user, "username": f"user{user}", "global_name": None},
            "mentions": [{"id": BOT_ID, "username": "hermes"}] if mention else [], "attachments": [], **extra,
        }
        if guild:
            data["guild_id"] = "700"
        self._from_thread(self._dispatch, "MESSAGE_CREATE", data)
        return str(data["id"])

    def push_press(self, channel: str, user: str, custom_id: str) -> None:
        """A user presses a button whose ``custom_id`` is given."""
        interaction = self._new_id()
        data = {"id": interaction, "token": f"itoken{interaction}", "type": 3, "channel_id": channel,
                "user": {"id": user, "username": f"user{user}"}, "data": {"custom_id": custom_id, "component_type": 2}}
        self._from_thread(self._dispatch, "INTERACTION_CREATE", data)

    def push_event(self, name: str, data: Any) -> None:
        """Any dispatch, exactly as given (a malformed one, for the bot's robustness)."""
        self._from_thread(self._dispatch, name, data)

    def drop(self) -> None:
        """End the websocket as a failing network would, without Discord saying why (close code 1011)."""
        self._from_thread(self._close, 1011)

    def ask_reconnect(self) -> None:
        """Op 7: Discord asks the client to reconnect (and resume)."""
        self._from_thread(self._send, {"op": 7, "d": None})

    def invalidate(self, resumable: bool) -> None:
        """Op 9: the session is invalid; a new one is made on the next IDENTIFY when not ``resumable``."""
        if not resumable:
            self.session_id = f"fake-session-{self.identifies + 1}"
        self._from_thread(self._send, {"op": 9, "d": resumable})

    def fail_next_send(self, status: int, body: dict[str, Any]) -> None:
        """Answer the next message POST with ``status`` and ``body``."""
        with self.lock:
            self.failures.append((status, body))

    def texts_to(self, channel: str) -> list[str]:
        """What the bot sent to a channel, in order."""
        with self.lock:
            return [m["content"] for m in self.sent if m["channel_id"] == channel]

    def wait_for_texts(self, channel: str, count: int, timeout: float = 30.0) -> list[str]:
        """Block until the bot has sent ``count`` texts to ``channel``."""
        self.wait_until(lambda: len([m for m in self.sent if m["channel_id"] == channel]) >= count, f"{count} texts", timeout)
        return self.texts_to(channel)

    def _new_id(self) -> str:
        with self.lock:
            self.next_id += 1
            return str(self.next_id)

    def _from_thread(self, function: Any, *args: Any) -> None:
        trio.from_thread.run(function, *args, trio_token=self.trio_token)

    # -- the Gateway (in its trio thread) -----------------------------------------------------------

    async def _dispatch(self, name: str, data: dict[str, Any]) -> None:
        self.seq += 1
        frame = {"op": 0, "s": self.seq, "t": name, "d": data}
        self.log.append(frame)
        await self._send(frame)

    async def _send(self, frame: dict[str, Any]) -> None:
        if self.connection is not None:
            try:
                await self.connection.send_message(json.dumps(frame))
            except ConnectionClosed:
                self.connection = None

    async def _close(self, code: int) -> None:
        connection, self.connection = self.connection, None
        if connection is not None:
            await connection.aclose(code)

    async def serve_gateway(self, request: WebSocketRequest) -> None:
        """One client connection."""
        socket = await request.accept()
        await socket.send_message(json.dumps({"op": 10, "d": {"heartbeat_interval": self.heartbeat_interval_ms}}))
        try:
            hello = json.loads(await socket.get_message())
            if hello["d"].get("token") != TOKEN:
                await socket.aclose(4004, "Authentication failed.")
                return
            if hello["op"] == 2:
                self.identifies += 1
                self.connection = socket
                await self._dispatch("READY", {"v": 10, "session_id": self.session_id, "resume_gateway_url": self.gateway_url,
                                               "user": {"id": BOT_ID, "username": "hermes", "bot": True}})
            elif hello["op"] == 6 and hello["d"].get("session_id") == self.session_id:
                self.resumes += 1
                for frame in [f for f in self.log if f["s"] > int(hello["d"].get("seq") or 0)]:
                    await socket.send_message(json.dumps(frame))
                self.connection = socket
                await self._dispatch("RESUMED", {})
            else:
                await socket.send_message(json.dumps({"op": 9, "d": False}))
                return
            while True:
                frame = json.loads(await socket.get_message())
                if frame.get("op") == 1:
                    self.heartbeats += 1
                    if self.ack_heartbeats:
                        await socket.send_message(json.dumps({"op": 11}))
        except ConnectionClosed:
            pass
        finally:
            if self.connection is socket:
                self.connection = None

    # -- REST (in the HTTP server's threads) --------------------------------------------------------

    def answer(self, method: str, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any] | None, dict[str, str]]:
        if path == "/api/v10/gateway/bot" and method == "GET":
            return 200, {"url": self.gateway_url, "shards": 1}, {}
        if (found := _MESSAGES.match(path)) and method == "POST":
            return self._post_message(found.group(1), body)
        if (found := _MESSAGE.match(path)) and method == "PATCH":
            with self.lock:
                self.edits.append({"channel_id": found.group(1), "message_id": found.group(2), **body})
                self.lock.notify_all()
            return 200, {"id": found.group(2), "channel_id": found.group(1), **body}, {}
        if (found := _REACTION.match(path)) and method in ("PUT", "DELETE"):
            with self.lock:
                self.reactions.append((method, found.group(2), unquote(found.group(3))))
                self.lock.notify_all()
            return 204, None, {}
        if _TYPING.match(path) and method == "POST":
            with self.lock:
                self.typing += 1
            return 204, None, {}
        if (found := _CALLBACK.match(path)) and method == "POST":
            with self.lock:
                self.callbacks.append({"interaction": found.group(1), **body})
                self.lock.notify_all()
            return 204, None, {}
        return 404, {"message": "404: Not Found", "code": 0}, {}

    def _post_message(self, channel: str, body: dict[str, Any]) -> tuple[int, dict[str, Any] | None, dict[str, str]]:
        with self.lock:
            if self.failures:
                status, reply = self.failures.pop(0)
                return status, reply, {}
            now = time.monotonic()
            remaining, reset_at = self._bucket
            if now >= reset_at:
                remaining, reset_at = self.bucket_size, now + self.bucket_window
            if remaining <= 0:
                self.violations += 1
                return 429, {"message": "You are being rate limited.", "retry_after": reset_at - now, "global": False}, {}
            remaining -= 1
            self._bucket = (remaining, reset_at)
            headers = {"X-RateLimit-Limit": str(self.bucket_size), "X-RateLimit-Remaining": str(remaining),
                       "X-RateLimit-Reset-After": f"{reset_at - now:.3f}", "X-RateLimit-Bucket": "messages-bucket"}
            self.next_id += 1
            message = {"id": str(self.next_id), "channel_id": channel, "content": body.get("content", ""),
                       "components": body.get("components") or [], "files": body.get("files") or {}}
            self.sent.append(message)
            self.lock.notify_all()
            return 200, {"id": message["id"], "channel_id": channel, "content": message["content"]}, headers


def _handler(fake: FakeDiscord) -> type[BaseHTTPRequestHandler]:
    class Handler(FakeHandler):
        def do_GET(self) -> None:  # noqa: N802 - the http.server API
            if self.path.startswith("/attachments/"):
                data = fake.files.get(self.path.removeprefix("/attachments/"))
                self.reply(200 if data is not None else 404, data or b"", "application/octet-stream")
                return
            self._api("GET", {})

        def do_POST(self) -> None:  # noqa: N802
            self._api("POST", self._body())

        def do_PATCH(self) -> None:  # noqa: N802
            self._api("PATCH", self._body())

        def do_PUT(self) -> None:  # noqa: N802
            self._api("PUT", self._body())

        def do_DELETE(self) -> None:  # noqa: N802
            self._api("DELETE", self._body())

        def _body(self) -> dict[str, Any]:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            content_type = self.headers.get("content-type") or ""
            if content_type.startswith("multipart/"):
                form = parse_multipart(content_type, raw)
                payload = json.loads(form.pop("payload_json", "{}"))
                return {**payload, "files": form}
            return json.loads(raw or b"{}")

        def _api(self, method: str, body: dict[str, Any]) -> None:
            if self.headers.get("authorization") != f"Bot {TOKEN}":
                self.reply(401, json.dumps({"message": "401: Unauthorized", "code": 0}).encode())
                return
            status, reply, headers = fake.answer(method, self.path, body)
            data = b"" if reply is None else json.dumps(reply).encode()
            self.reply(status, data, headers=headers)

    return Handler


@contextmanager
def fake_discord() -> Iterator[FakeDiscord]:
    """A running fake (REST and Gateway) on 127.0.0.1; stopped at the end."""
    fake = FakeDiscord()
    with serving(_handler(fake)) as url:
        fake.base, fake.api_url = url, f"{url}/api/v10"
        with serving_websocket(fake.serve_gateway) as (fake.gateway_url, fake.trio_token):
            yield fake
