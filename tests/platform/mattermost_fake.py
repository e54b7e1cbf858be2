"""A fake Mattermost on loopback: the REST API v4 and the WebSocket events API, as documented.

REST (``/api/v4/...``, ``Authorization: Bearer <token>``, a refused token answered ``401``):
``GET users/me``, ``POST posts`` (``201``, over 16,383 characters refused ``400``), ``PUT posts/{id}/patch``,
``POST files`` (multipart), ``POST reactions`` and ``DELETE users/{id}/posts/{id}/reactions/{emoji}``,
``POST users/{id}/typing``, and users' files at ``GET files/{id}``. The test can answer the next post with
a ``429`` and its ``X-Ratelimit-Reset``.

WebSocket (``/api/v4/websocket``, a trio-websocket server in its own thread): the client's
``authentication_challenge`` answered ``{"status": "OK", "seq_reply": 1}`` (or ``FAIL`` and closed for a
refused token), then ``hello`` with the connection's id as event 0. Events the test pushes are numbered
``seq`` and kept; a client that comes back with ``connection_id`` and ``sequence_number`` is sent the
ones it missed, on the same connection id, as Mattermost does.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from trio_websocket import ConnectionClosed, WebSocketRequest

from tests.platform.fake_http import FakeHandler, parse_multipart, serving
from tests.platform.fake_ws import SocketFake, serving_websocket

TOKEN = "mmbot-TEST-token-never-logged-0001"
BOT_ID, BOT_NAME = "b" * 26, "hermes"
LIMIT = 16_383


def new_id() -> str:
    """A fresh id, as Mattermost writes them (26 lowercase letters and digits)."""
    return secrets.token_hex(13)


class FakeMattermost(SocketFake):
    """The fake's state; ``url`` once started."""

    def __init__(self) -> None:
        super().__init__()
        self.edits: list[dict[str, Any]] = []
        self.reactions: list[tuple[str, str, str]] = []
        self.uploads: dict[str, dict[str, Any]] = {}
        self.files: dict[str, bytes] = {}
        self.failures: list[tuple[int, dict[str, Any], dict[str, str]]] = []
        self.rate_limited = 0
        self.token = TOKEN
        self.url = self.socket_url = ""
        # The WebSocket: the connection's id, its numbered events, counters.
        self.connection_id = ""
        self.events: list[dict[str, Any]] = []
        self.hellos = self.resumes = 0
        self.auth_tokens: list[str] = []

    # -- what the test does ---------------------------------------------------------------------

    def push_post(self, channel: str, user: str, text: str, *, direct: bool = False, root_id: str = "",
                  mention: bool = False, **extra: Any) -> str:
        """A user's post: in a DM when ``direct``, else in a channel (mentioning the bot when ``mention``),
        in the thread ``root_id`` when given; its id."""
        post = {"id": new_id(), "create_at": 1, "user_id": user, "channel_id": channel, "root_id": root_id,
                "message": f"@{BOT_NAME} {text}" if mention else text, "type": "", "props": {}, **extra}
        self.push_event("posted", {"channel_type": "D" if direct else "O", "sender_name": f"@user{user[:4]}",
                                   "post": json.dumps(post), "team_id": "t" * 26})
        return str(post["id"])

    def push_event(self, event: str, data: Any) -> None:
        """An event, numbered and kept for a client that resumes."""
        with self.lock:
            frame = {"event": event, "data": data, "broadcast": {}, "seq": len(self.events) + 1}
            self.events.append(frame)
        self._from_thread(self._send_raw, json.dumps(frame))

    def revoke(self) -> None:
        """The token is revoked: every request with it is refused from now on."""
        with self.lock:
            self.token = "revoked"

    def fail_next_post(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        """Answer the next ``POST /posts`` with ``status``, ``body`` and ``headers``."""
        with self.lock:
            self.failures.append((status, body, headers or {}))

    def posts_to(self, channel: str) -> list[dict[str, Any]]:
        """What the bot posted to a channel, in order."""
        with self.lock:
            return [p for p in self.sent if p["channel_id"] == channel]

    def texts_to(self, channel: str) -> list[str]:
        """The messages the bot posted to a channel, in order."""
        return [p["message"] for p in self.posts_to(channel)]

    def wait_for_texts(self, channel: str, count: int, timeout: float = 30.0) -> list[str]:
        """Block until the bot has posted ``count`` messages to ``channel``."""
        self.wait_until(lambda: len(self.posts_to(channel)) >= count, f"{count} posts to {channel}", timeout)
        return self.texts_to(channel)

    # -- the WebSocket (in its trio thread) -----------------------------------------------------------

    async def serve_socket(self, request: WebSocketRequest) -> None:
        """One client connection: authentication, hello, the events it missed, then new events."""
        parts = urlsplit(request.path)
        if parts.path != "/api/v4/websocket":
            await request.reject(404)
            return
        query = {key: values[0] for key, values in parse_qs(parts.query).items()}
        socket = await request.accept()
        try:
            challenge = json.loads(await socket.get_message())
            token = str(challenge.get("data", {}).get("token"))
            with self.lock:
                self.auth_tokens.append(token)
            if challenge.get("action") != "authentication_challenge" or token != self.token:
                await socket.send_message(json.dumps({"status": "FAIL", "seq_reply": challenge.get("seq"), "error": "invalid token"}))
                await socket.aclose(1008)
                return
            await socket.send_message(json.dumps({"status": "OK", "seq_reply": challenge.get("seq")}))
            with self.lock:
                resuming = bool(self.connection_id) and query.get("connection_id") == self.connection_id
                if resuming:
                    self.resumes += 1
                    missed = [frame for frame in self.events if frame["seq"] >= int(query.get("sequence_number", "0"))]
                else:
                    self.connection_id, self.events, missed = new_id(), [], []
                self.hellos += 1
            hello = {"event": "hello", "data": {"connection_id": self.connection_id, "server_version": "9.11.0"}, "broadcast": {}, "seq": 0}
            await socket.send_message(json.dumps(hello))
            self.connection = socket
            for frame in missed:
                await socket.send_message(json.dumps(frame))
            while True:
                await socket.get_message()  # the client's own actions: nothing to answer here
        except ConnectionClosed:
            pass
        finally:
            if self.connection is socket:
                self.connection = None

    # -- the REST API (in the HTTP server's threads) ---------------------------------------------------

    def answer(self, method: str, path: str, token: str, body: Any) -> tuple[int, Any, dict[str, str]]:
        if token != self.token:
            return 401, {"id": "api.context.session_expired.app_error", "message": "Invalid or expired session", "status_code": 401}, {}
        with self.lock:
            if (method, path) == ("GET", "users/me"):
                return 200, {"id": BOT_ID, "username": BOT_NAME, "is_bot": True}, {}
            if (method, path) == ("POST", "posts"):
                return self._post(body)
            if method == "PUT" and (edited := re.fullmatch(r"posts/(\w+)/patch", path)):
                self.edits.append({"id": edited[1], **body})
                self.lock.notify_all()
                return 200, {"id": edited[1], **body}, {}
            if (method, path) == ("POST", "reactions"):
                self.reactions.append(("add", body["post_id"], body["emoji_name"]))
                return 201, body, {}
            if method == "DELETE" and (removed := re.fullmatch(r"users/(\w+)/posts/(\w+)/reactions/(\w+)", path)):
                self.reactions.append(("remove", removed[2], removed[3]))
                return 200, {"status": "OK"}, {}
            if (method, path) == ("POST", "files"):
                file_id = new_id()
                self.uploads[file_id] = {"channel_id": body["channel_id"], **body["files"]}
                return 201, {"file_infos": [{"id": file_id, "name": body["files"]["filename"]}]}, {}
            if method == "POST" and re.fullmatch(r"users/\w+/typing", path):
                return 200, {"status": "OK"}, {}
        return 404, {"id": "api.context.404.app_error", "status_code": 404}, {}

    def _post(self, body: dict[str, Any]) -> tuple[int, Any, dict[str, str]]:
        if self.failures:
            self.rate_limited += 1
            return self.failures.pop(0)
        if len(str(body.get("message", ""))) > LIMIT:
            return 400, {"id": "model.post.is_valid.msg.app_error", "status_code": 400}, {}
        post = {**body, "id": new_id(), "user_id": BOT_ID}
        self.sent.append(post)
        self.lock.notify_all()
        return 201, post, {}


def _handler(fake: FakeMattermost) -> type[BaseHTTPRequestHandler]:
    class Handler(FakeHandler):
        def _serve(self, method: str) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            token = (self.headers.get("authorization") or "").removeprefix("Bearer ")
            path = self.path.removeprefix("/api/v4/")
            if method == "GET" and path.startswith("files/"):
                data = fake.files.get(path.removeprefix("files/"))
                status = 401 if token != fake.token else 200 if data is not None else 404
                self.reply(status, data or b"", "application/octet-stream")
                return
            content_type = self.headers.get("content-type") or ""
            if content_type.startswith("multipart/"):
                body: Any = parse_multipart(content_type, raw)
            else:
                body = json.loads(raw) if raw else {}
            status, reply, headers = fake.answer(method, path, token, body)
            self.reply(status, json.dumps(reply).encode(), headers=headers)

        def do_GET(self) -> None:  # noqa: N802 - the http.server API
            self._serve("GET")

        def do_POST(self) -> None:  # noqa: N802
            self._serve("POST")

        def do_PUT(self) -> None:  # noqa: N802
            self._serve("PUT")

        def do_DELETE(self) -> None:  # noqa: N802
            self._serve("DELETE")

    return Handler


@contextmanager
def fake_mattermost() -> Iterator[FakeMattermost]:
    """A running fake (REST and WebSocket, each on its own port) on 127.0.0.1; stopped at the end."""
    fake = FakeMattermost()
    with serving(_handler(fake)) as url, serving_websocket(fake.serve_socket) as (socket_url, fake.trio_token):
        fake.url, fake.socket_url = url, f"{socket_url}/api/v4/websocket"
        yield fake
