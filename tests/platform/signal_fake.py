"""A fake signal-cli daemon on loopback, speaking its HTTP endpoint as ``signal-cli -a +NUMBER daemon --http``
does (``man signal-cli-jsonrpc``).

``GET /api/v1/check``: 200. ``POST /api/v1/rpc`` (``application/json``, else 415): one JSON-RPC 2.0 call,
answered ``{"jsonrpc", "result", "id"}`` or ``{"jsonrpc", "error": {"code", "message", "data"}, "id"}``;
``send`` (``recipient`` or ``groupId``, ``message``, ``textStyle``, ``attachments`` paths, ``editTimestamp``)
answers ``{"timestamp", "results": [{"recipientAddress", "type": "SUCCESS"}]}``, ``sendReaction`` likewise,
``sendTyping`` ``{}``, ``getAttachment`` (``id``) ``{"data": BASE64}``. The test can answer a method's next
call with an error (a rate limit is code -5, its ``data.response.results[*].retryAfterSeconds`` the wait),
or with a result of its choosing.

``GET /api/v1/events?account=`` (400 for an account the daemon does not have): a server-sent event stream,
``id:START-SEQ``, ``event:receive``, one ``data:`` line of ``{"envelope", "account"}``, a blank line; a
``:`` keep-alive line now and then. Events are numbered and the last 1,000 kept; a client that comes back
with ``Last-Event-ID`` is first sent those after it, or all kept when the id is not one of this run's.
"""

from __future__ import annotations

import base64
import itertools
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.platform.fake_http import FakeHandler, FakePlatform, serving

ACCOUNT = "+15550000001"
BOT_UUID = "b0b0b0b0-0000-4000-8000-000000000001"
KEPT = 1000


class FakeSignal(FakePlatform):
    """The fake's state; ``url`` once started."""

    def __init__(self) -> None:
        super().__init__()
        self.url = ""
        self.accounts = {ACCOUNT}
        self.prefix = f"{int(time.time() * 1000)}-"
        self.events: list[tuple[int, str]] = []  # (sequence, the data line)
        self.generation = 0  # raised to end every open stream
        self.closed = False
        self.streams = 0
        self.last_event_ids: list[str | None] = []
        self.calls: list[dict[str, Any]] = []
        self.reactions: list[dict[str, Any]] = []
        self.typing = 0
        self.attachments: dict[str, bytes] = {}
        self.failures: dict[str, list[dict[str, Any]]] = {}  # method -> the next answers, scripted
        self.rate_limited = 0
        self._clock = itertools.count(1_700_000_000_000, 1000)

    # -- what the test does ---------------------------------------------------------------------

    def push_message(self, sender: str, text: str, *, group: str = "", mention: bool = False, quote: int | None = None,
                     attachments: list[dict[str, Any]] | None = None, name: str = "") -> int:
        """A user's message (in ``group`` when given, mentioning the bot when ``mention``, quoting the bot's
        message ``quote``); its timestamp, which is its id on Signal."""
        timestamp = next(self._clock)
        message: dict[str, Any] = {"timestamp": timestamp, "message": f"\ufffc {text}" if mention else text,
                                   "expiresInSeconds": 0, "viewOnce": False, "attachments": attachments or []}
        if mention:
            message["mentions"] = [{"name": ACCOUNT, "number": ACCOUNT, "uuid": BOT_UUID, "start": 0, "length": 1}]
        if group:
            message["groupInfo"] = {"groupId": group, "groupName": "The group", "revision": 3, "type": "DELIVER"}
        if quote is not None:
            message["quote"] = {"id": quote, "author": ACCOUNT, "authorNumber": ACCOUNT, "authorUuid": BOT_UUID, "text": "..."}
        self.push_envelope({"source": sender, "sourceNumber": sender, "sourceUuid": f"{sender[-8:]:0>8}-0000-4000-8000-000000000000",
                            "sourceName": name or f"User {sender[-4:]}", "sourceDevice": 1, "timestamp": timestamp,
                            "dataMessage": message})
        return timestamp

    def push_note_to_self(self, text: str, timestamp: int | None = None) -> int:
        """The account's owner writing to themselves from their phone (the daemon being a linked device), or
        with the ``timestamp`` of a message the bot sent there, that message echoed; its timestamp."""
        timestamp = timestamp if timestamp is not None else next(self._clock)
        sent = {"destination": ACCOUNT, "destinationNumber": ACCOUNT, "destinationUuid": BOT_UUID, "timestamp": timestamp,
                "message": text, "expiresInSeconds": 0, "viewOnce": False}
        self.push_envelope({"source": ACCOUNT, "sourceNumber": ACCOUNT, "sourceUuid": BOT_UUID, "sourceName": "Me",
                            "sourceDevice": 1, "timestamp": timestamp, "syncMessage": {"sentMessage": sent}})
        return timestamp

    def push_envelope(self, envelope: dict[str, Any], account: str = ACCOUNT) -> None:
        """Any envelope, as a ``receive`` event."""
        self.push_data(json.dumps({"envelope": envelope, "account": account}))

    def push_data(self, data: str) -> None:
        """An event whose data line is exactly ``data`` (a malformed one, for the client's robustness)."""
        with self.lock:
            self.events.append((len(self.events) + 1, data))
            del self.events[:-KEPT]
            self.lock.notify_all()

    def drop(self) -> None:
        """End every open stream, as a failing network would."""
        with self.lock:
            self.generation += 1
            self.lock.notify_all()

    def restart(self) -> None:
        """signal-cli restarted: its event ids start afresh (an old one is unknown) and the streams end."""
        with self.lock:
            self.prefix = f"{int(time.time() * 1000) + 1}-"
        self.drop()

    def forget_account(self) -> None:
        """The account is no longer the daemon's (unregistered, or its data removed)."""
        with self.lock:
            self.accounts = set()
        self.drop()

    def fail_next(self, method: str, error: dict[str, Any]) -> None:
        """Answer ``method``'s next call with ``error``."""
        with self.lock:
            self.failures.setdefault(method, []).append({"error": error})

    def answer_next(self, method: str, result: dict[str, Any]) -> None:
        """Answer ``method``'s next call with ``result`` (a send whose recipients failed, say)."""
        with self.lock:
            self.failures.setdefault(method, []).append({"result": result})

    def sends(self) -> list[dict[str, Any]]:
        """The ``send`` calls' params that went through (edits among them), in order, each with the timestamp
        it was answered (``sent_at``: the message's id on Signal)."""
        with self.lock:
            return [dict(s) for s in self.sent]

    def texts_to(self, chat: str) -> list[str]:
        """The messages (not edits) sent to a number or ``group:ID``, in order."""
        return [s["message"] for s in self.sends() if _chat(s) == chat and "editTimestamp" not in s and s.get("message")]

    def wait_for_texts(self, chat: str, count: int, timeout: float = 30.0) -> list[str]:
        """Block until ``count`` messages went to ``chat``."""
        self.wait_until(lambda: len(self.texts_to(chat)) >= count, f"{count} messages to {chat}", timeout)
        return self.texts_to(chat)

    # -- the endpoint (in its handler threads) ----------------------------------------------------------

    def rpc(self, request: Any) -> dict[str, Any]:
        """One JSON-RPC call's answer."""
        if not isinstance(request, dict) or not isinstance(request.get("method"), str):
            return {"jsonrpc": "2.0", "error": {"code": -32600, "message": "method field must be set", "data": None}, "id": None}
        method, params, call_id = request["method"], request.get("params") or {}, request.get("id")
        with self.lock:
            self.calls.append({"method": method, **params})
            pending = self.failures.get(method)
            scripted = pending.pop(0) if pending else None
            if scripted is not None and scripted.get("error", {}).get("code") == -5:
                self.rate_limited += 1
        if scripted is not None:
            return {"jsonrpc": "2.0", **scripted, "id": call_id}
        if params.get("account") not in self.accounts:
            return {"jsonrpc": "2.0", "error": {"code": -32602, "message": "Specified account does not exist", "data": None}, "id": call_id}
        result = self._method(method, params)
        if result is None:
            return {"jsonrpc": "2.0", "error": {"code": -32601, "message": "Method not implemented", "data": None}, "id": call_id}
        return {"jsonrpc": "2.0", "result": result, "id": call_id}

    def _method(self, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        if method == "getAttachment":
            data = self.attachments.get(str(params.get("id")))
            return {"data": base64.b64encode(data).decode()} if data is not None else {}
        if method == "sendTyping":
            with self.lock:
                self.typing += 1
            return {}
        if method not in ("send", "sendReaction"):
            return None
        timestamp = next(self._clock)
        with self.lock:
            if method == "send":
                for path in params.get("attachments") or ():
                    with open(path, "rb") as attached:
                        params = {**params, "attached": [*params.get("attached", []), attached.read()]}
                self.sent.append({**params, "sent_at": timestamp})
            else:
                self.reactions.append(params)
            self.lock.notify_all()
        address = {"number": params["recipient"][0]} if params.get("recipient") else {"number": "+15559999999"}
        return {"timestamp": timestamp, "results": [{"recipientAddress": address, "type": "SUCCESS"}]}

    def stream(self, handler: BaseHTTPRequestHandler, last_id: str | None) -> None:
        """Write events to one client until the stream is dropped or the fake stops."""
        with self.lock:
            self.streams += 1
            self.last_event_ids.append(last_id)
            generation, prefix = self.generation, self.prefix
            after = int(last_id.removeprefix(prefix)) if last_id and last_id.startswith(prefix) and last_id.removeprefix(prefix).isdigit() else 0
            self.lock.notify_all()
        try:
            while True:
                with self.lock:
                    if self.generation != generation or self.closed:
                        return
                    due = [(seq, data) for seq, data in self.events if seq > after]
                    if not due:
                        self.lock.wait(0.5)
                        due = [(seq, data) for seq, data in self.events if seq > after]
                    if self.generation != generation or self.closed:
                        return
                for seq, data in due:
                    handler.wfile.write(f"id:{prefix}{seq}\nevent:receive\ndata:{data}\n\n".encode())
                    after = seq
                handler.wfile.write(b":\n")  # signal-cli's keep-alive
                handler.wfile.flush()
        except OSError:
            return


def _chat(params: dict[str, Any]) -> str:
    return f"group:{params['groupId']}" if params.get("groupId") else str((params.get("recipient") or [""])[0])


def _handler(fake: FakeSignal) -> type[BaseHTTPRequestHandler]:
    class Handler(FakeHandler):
        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            if parts.path == "/api/v1/check":
                self.reply(200, b"")
                return
            if parts.path != "/api/v1/events":
                self.reply(404, b"")
                return
            account = parse_qs(parts.query).get("account", [""])[0]
            with fake.lock:
                known = account in fake.accounts
            if not known:
                self.reply(400, b"")
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            fake.stream(self, self.headers.get("Last-Event-ID"))

        def do_POST(self) -> None:
            if urlsplit(self.path).path != "/api/v1/rpc":
                self.reply(404, b"")
                return
            if not (self.headers.get("Content-Type") or "").startswith("application/json"):
                self.reply(415, b"")
                return
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                request = json.loads(raw)
            except ValueError:
                request = None
            self.reply(200, json.dumps(fake.rpc(request)).encode())

    return Handler


@contextmanager
def fake_signal() -> Iterator[FakeSignal]:
    """A running fake signal-cli daemon; stopped at the end."""
    fake = FakeSignal()
    with serving(_handler(fake)) as url:
        fake.url = url
        try:
            yield fake
        finally:
            with fake.lock:
                fake.closed = True
                fake.lock.notify_all()
