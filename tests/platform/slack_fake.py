"""A fake Slack on loopback: the Web API and a Socket Mode WebSocket, as documented.

Web API (``POST /api/<method>``, ``Authorization: Bearer <token>``, JSON or form bodies, answers
``{"ok": ...}``): ``auth.test``, ``apps.connections.open`` (the app-level token only), ``chat.postMessage``,
``chat.update``, ``chat.postEphemeral``, ``reactions.add`` / ``.remove``, ``files.getUploadURLExternal`` with
the upload address it names and ``files.completeUploadExternal``, ``conversations.list`` (paged), and users'
files at ``/files/NAME`` (the bot token required). A refused token is answered ``invalid_auth``; the test
can answer the next post with a 429 and its ``Retry-After``.

Socket Mode (a trio-websocket server in its own thread): ``hello`` on connect; envelopes the test pushes
(``events_api``, ``interactive``, ``slash_commands``) are kept until acknowledged and sent again on the
next connection when they were not, as Slack does. The test can drop the socket, send ``disconnect``, or
send any frame as it is.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qsl

from trio_websocket import ConnectionClosed, WebSocketRequest

from tests.platform.fake_http import FakeHandler, serving
from tests.platform.fake_ws import SocketFake, serving_websocket

BOT_TOKEN = "xoxb-TEST-bot-token-never-logged"
APP_TOKEN = "xapp-TEST-app-token-never-logged"
BOT_ID = "UBOT00001"
CHANNELS = {"general": "C0GENERAL1", "random": "C0RANDOM01"}


class FakeSlack(SocketFake):
    """The fake's state; ``api_url`` once started."""

    def __init__(self) -> None:
        super().__init__()
        self.edits: list[dict[str, Any]] = []
        self.ephemerals: list[dict[str, Any]] = []
        self.reactions: list[tuple[str, str, str]] = []
        self.uploads: dict[str, bytes] = {}
        self.shared: list[dict[str, Any]] = []
        self.files: dict[str, bytes] = {}
        self.failures: list[tuple[int, dict[str, Any], dict[str, str]]] = []
        self.rate_limited = 0
        self.calls: list[str] = []
        self.bot_token = BOT_TOKEN
        self.next_ts = 1_700_000_000
        self.api_url = self.base = self.socket_url = ""
        # Socket Mode: the envelopes not acknowledged yet, the connection, counters.
        self.unacked: dict[str, dict[str, Any]] = {}
        self.acks: list[str] = []
        self.hellos = 0
        self.next_envelope = 0

    # -- what the test does ---------------------------------------------------------------------

    def push_message(self, channel: str, user: str, text: str, *, thread_ts: str | None = None, mention: bool = False, **extra: Any) -> str:
        """A user's message: in a DM when ``channel`` starts with D, else in a channel (mentioning the bot
        when ``mention``); its ``ts``."""
        ts = self.new_ts()
        event: dict[str, Any] = {
            "type": "message", "channel": channel, "user": user, "text": f"<@{BOT_ID}> {text}" if mention else text,
            "ts": ts, "channel_type": "im" if channel.startswith("D") else "channel", **extra,
        }
        if thread_ts is not None:
            event["thread_ts"] = thread_ts
        self.push_envelope("events_api", {"type": "event_callback", "team_id": "T1", "event_id": f"Ev{ts}", "event": event})
        return ts

    def push_press(self, channel: str, user: str, value: str, *, thread_ts: str | None = None) -> None:
        """A user presses a Block Kit button whose ``value`` is given."""
        message = {"ts": self.new_ts(), **({"thread_ts": thread_ts} if thread_ts else {})}
        self.push_envelope("interactive", {
            "type": "block_actions", "user": {"id": user}, "channel": {"id": channel}, "message": message,
            "container": {"type": "message", "channel_id": channel}, "actions": [{"action_id": "choice_0", "value": value, "type": "button"}],
        })

    def push_command(self, channel: str, user: str, command: str, text: str = "") -> None:
        """A user runs a slash command in a channel or DM."""
        self.push_envelope("slash_commands", {"command": command, "text": text, "user_id": user, "user_name": f"user{user}",
                                              "channel_id": channel, "team_id": "T1"})

    def push_envelope(self, kind: str, payload: Any) -> None:
        """An envelope of ``kind`` with ``payload``, kept until acknowledged."""
        with self.lock:
            self.next_envelope += 1
            envelope = {"envelope_id": f"env-{self.next_envelope}", "type": kind, "payload": payload, "accepts_response_payload": False}
            self.unacked[envelope["envelope_id"]] = envelope
        self._from_thread(self._send, envelope)

    def ask_disconnect(self) -> None:
        """Slack's ``disconnect``: the app is to open a new connection."""
        self._from_thread(self._send_raw, json.dumps({"type": "disconnect", "reason": "refresh_requested"}))

    def revoke(self) -> None:
        """The bot token is revoked: every call with it is refused from now on."""
        with self.lock:
            self.bot_token = "xoxb-revoked"

    def fail_next_post(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        """Answer the next ``chat.postMessage`` with ``status``, ``body`` and ``headers``."""
        with self.lock:
            self.failures.append((status, body, headers or {}))

    def posts_to(self, channel: str) -> list[dict[str, Any]]:
        """What the bot posted to a channel, in order."""
        with self.lock:
            return [m for m in self.sent if m["channel"] == channel]

    def texts_to(self, channel: str) -> list[str]:
        """The texts the bot posted to a channel, in order."""
        return [m["text"] for m in self.posts_to(channel)]

    def wait_for_texts(self, channel: str, count: int, timeout: float = 30.0) -> list[str]:
        """Block until the bot has posted ``count`` messages to ``channel``."""
        self.wait_until(lambda: len(self.posts_to(channel)) >= count, f"{count} posts to {channel}", timeout)
        return self.texts_to(channel)

    def new_ts(self) -> str:
        """A fresh message timestamp, as Slack writes them."""
        with self.lock:
            self.next_ts += 1
            return f"{self.next_ts}.000100"

    # -- Socket Mode (in its trio thread) -------------------------------------------------------------

    async def _send(self, envelope: dict[str, Any]) -> None:
        await self._send_raw(json.dumps(envelope))

    async def serve_socket(self, request: WebSocketRequest) -> None:
        """One client connection: hello, the envelopes still unacknowledged, then acknowledgements."""
        if not request.path.startswith("/link/?ticket="):
            await request.reject(404)
            return
        socket = await request.accept()
        with self.lock:
            self.hellos += 1
            waiting = list(self.unacked.values())
        await socket.send_message(json.dumps({"type": "hello", "num_connections": 1, "connection_info": {"app_id": "A1"}}))
        self.connection = socket
        try:
            for envelope in waiting:
                await socket.send_message(json.dumps(envelope))
            while True:
                frame = json.loads(await socket.get_message())
                with self.lock:
                    self.acks.append(frame.get("envelope_id"))
                    self.unacked.pop(frame.get("envelope_id"), None)
                    self.lock.notify_all()
        except ConnectionClosed:
            pass
        finally:
            if self.connection is socket:
                self.connection = None

    # -- the Web API (in the HTTP server's threads) ---------------------------------------------------

    def answer(self, method: str, token: str, args: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
        with self.lock:
            self.calls.append(method)
        if method == "apps.connections.open":
            if token != APP_TOKEN:
                return 200, {"ok": False, "error": "invalid_auth" if not token.startswith("xoxb-") else "not_allowed_token_type"}, {}
            return 200, {"ok": True, "url": f"{self.socket_url}/link/?ticket=t{time.monotonic_ns()}"}, {}
        if token != self.bot_token:
            return 200, {"ok": False, "error": "token_revoked" if token == BOT_TOKEN else "invalid_auth"}, {}
        if method == "auth.test":
            return 200, {"ok": True, "user_id": BOT_ID, "user": "hermes", "team_id": "T1", "team": "Test"}, {}
        if method == "chat.postMessage":
            return self._post(args)
        with self.lock:
            if method == "chat.update":
                self.edits.append(args)
            elif method == "chat.postEphemeral":
                self.ephemerals.append(args)
            elif method in ("reactions.add", "reactions.remove"):
                self.reactions.append((method.split(".")[1], args["timestamp"], args["name"]))
            elif method == "files.getUploadURLExternal":
                file_id = f"F{len(self.uploads) + 1:08d}"
                self.uploads[file_id] = b""
                return 200, {"ok": True, "file_id": file_id, "upload_url": f"{self.base}/upload/{file_id}"}, {}
            elif method == "files.completeUploadExternal":
                files = json.loads(args["files"])
                self.shared.extend({**args, "file": f["id"], "title": f.get("title"), "content": self.uploads.get(f["id"])} for f in files)
            elif method == "conversations.list":
                names = sorted(CHANNELS)
                page = names[:1] if not args.get("cursor") else names[1:]
                listed = [{"id": CHANNELS[name], "name": name} for name in page]
                return 200, {"ok": True, "channels": listed, "response_metadata": {"next_cursor": "" if args.get("cursor") else "page2"}}, {}
            else:
                return 200, {"ok": False, "error": "unknown_method"}, {}
            self.lock.notify_all()
        return 200, {"ok": True, "ts": args.get("ts", "")}, {}

    def _post(self, args: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
        with self.lock:
            if self.failures:
                self.rate_limited += 1
                return self.failures.pop(0)
            if len(str(args.get("text", ""))) > 40_000:
                return 200, {"ok": False, "error": "msg_too_long"}, {}
            self.next_ts += 1
            message = {**args, "ts": f"{self.next_ts}.000200"}
            self.sent.append(message)
            self.lock.notify_all()
            return 200, {"ok": True, "channel": args["channel"], "ts": message["ts"]}, {}


def _handler(fake: FakeSlack) -> type[BaseHTTPRequestHandler]:
    class Handler(FakeHandler):
        def do_GET(self) -> None:  # noqa: N802 - the http.server API
            data = fake.files.get(self.path.removeprefix("/files/"))
            if self.headers.get("authorization") != f"Bearer {fake.bot_token}":
                self.reply(403, b"", "text/plain")
            else:
                self.reply(200 if data is not None else 404, data or b"", "application/octet-stream")

        def do_POST(self) -> None:  # noqa: N802
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            if self.path.startswith("/upload/"):
                with fake.lock:
                    fake.uploads[self.path.removeprefix("/upload/")] = raw
                self.reply(200, b"OK - 0", "text/plain")
                return
            content_type = self.headers.get("content-type") or ""
            args = json.loads(raw or b"{}") if content_type.startswith("application/json") else dict(parse_qsl(raw.decode()))
            token = (self.headers.get("authorization") or "").removeprefix("Bearer ")
            status, reply, headers = fake.answer(self.path.removeprefix("/api/"), token, args)
            self.reply(status, json.dumps(reply).encode(), headers=headers)

    return Handler


@contextmanager
def fake_slack() -> Iterator[FakeSlack]:
    """A running fake (Web API and Socket Mode) on 127.0.0.1; stopped at the end."""
    fake = FakeSlack()
    with serving(_handler(fake)) as url:
        fake.base, fake.api_url = url, f"{url}/api"
        with serving_websocket(fake.serve_socket) as (fake.socket_url, fake.trio_token):
            yield fake
