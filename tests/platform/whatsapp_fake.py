"""A fake of Meta's Graph API for one WhatsApp business number on loopback, and a test client that posts
signed webhook events to the daemon's real HTTP port, as Meta does.

Graph (``/v20.0/...``, ``Authorization: Bearer <token>``, a refused token answered with code ``190``):
``GET {phone-id}`` (the number), ``POST {phone-id}/messages`` (text over 4,096 characters refused with code
``100``; a read receipt with ``status: read``; a free-form message to a number whose 24-hour window is
closed refused with ``131047``, a template taken), ``POST {phone-id}/media`` (multipart), ``GET {media-id}``
(the media's address, here) and that address's bytes. The test can answer the next send with an error
(a rate limit's code) or drop it unanswered (a network failure).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

import httpx2

from actors.platform.whatsapp.webhook import SIGNATURE_HEADER, signature
from tests.platform.fake_http import FakeHandler, FakePlatform, parse_multipart, serving

TOKEN = "EAAG-whatsapp-TEST-token-never-logged-0001"
APP_SECRET = "whatsapp-app-secret-never-logged-01"
VERIFY_TOKEN = "whatsapp-verify-word-never-logged"
PHONE_ID, NUMBER = "109876543210", "15550001111"
LIMIT = 4096


def _error(code: int, message: str, status: int = 400) -> tuple[int, dict[str, Any]]:
    return status, {"error": {"message": message, "type": "OAuthException", "code": code, "fbtrace_id": "AbC"}}


class FakeGraph(FakePlatform):
    """The fake's state; ``url`` once started."""

    def __init__(self) -> None:
        super().__init__()
        self.token = TOKEN
        self.url = ""
        self.reads: list[dict[str, Any]] = []
        self.uploads: dict[str, dict[str, Any]] = {}
        self.media: dict[str, tuple[bytes, str]] = {}
        self.failures: list[tuple[int, dict[str, Any]] | None] = []
        self.closed_windows: set[str] = set()
        self.refused = 0
        self.dropped: list[dict[str, Any]] = []  # sends read and left unanswered (Graph may have acted on them)

    # -- what the test does ---------------------------------------------------------------------

    def revoke(self) -> None:
        """The token is revoked: every request with it is refused (code 190) from now on."""
        with self.lock:
            self.token = "revoked"

    def fail_next_send(self, code: int | None, status: int = 400) -> None:
        """Answer the next ``POST messages`` with Graph error ``code``, or read it and close the connection
        unanswered when None (kept in :attr:`dropped`)."""
        with self.lock:
            self.failures.append(_error(code, "fake failure", status) if code is not None else None)

    def messages_to(self, number: str) -> list[dict[str, Any]]:
        """What the bot sent to ``number``, in order."""
        with self.lock:
            return [m for m in self.sent if m["to"] == number]

    def texts_to(self, number: str) -> list[str]:
        """The text messages the bot sent to ``number``, in order."""
        return [m["text"]["body"] for m in self.messages_to(number) if m["type"] == "text"]

    def wait_for_texts(self, number: str, count: int, timeout: float = 30.0) -> list[str]:
        """Block until the bot has sent ``count`` text messages to ``number``."""
        self.wait_until(lambda: len(self.texts_to(number)) >= count, f"{count} texts to {number}", timeout)
        return self.texts_to(number)

    # -- Graph (in the HTTP server's threads) --------------------------------------------------

    def answer(self, method: str, path: str, token: str, body: Any) -> tuple[int, Any]:
        if token != self.token:
            return _error(190, "Error validating access token: The session has been invalidated.", 401)
        with self.lock:
            if (method, path) == ("GET", PHONE_ID):
                return 200, {"id": PHONE_ID, "display_phone_number": NUMBER, "verified_name": "Hermes"}
            if (method, path) == ("POST", f"{PHONE_ID}/messages"):
                return self._message(body)
            if (method, path) == ("POST", f"{PHONE_ID}/media"):
                media_id = str(secrets.randbelow(10**15))
                self.uploads[media_id] = body
                return 200, {"id": media_id}
            if method == "GET" and path in self.media:
                data, mime = self.media[path]
                return 200, {"url": f"{self.url}/download/{path}", "mime_type": mime, "file_size": len(data), "id": path}
        return _error(100, "Unsupported request", 404)

    def _message(self, body: dict[str, Any]) -> tuple[int, Any]:
        if body.get("status") == "read":
            self.reads.append(body)
            return 200, {"success": True}
        if body.get("messaging_product") != "whatsapp" or not str(body.get("to", "")).isdigit():
            return _error(100, "Invalid parameter")
        if body.get("type") == "text" and len(body["text"]["body"]) > LIMIT:
            return _error(100, "Param text['body'] must be at most 4096 characters long.")
        if body["to"] in self.closed_windows and body.get("type") != "template":
            self.refused += 1
            return _error(131047, "Re-engagement message")
        message_id = f"wamid.{secrets.token_hex(12)}"
        self.sent.append({**body, "id": message_id})
        self.lock.notify_all()
        return 200, {"messaging_product": "whatsapp", "contacts": [{"input": body["to"], "wa_id": body["to"]}],
                     "messages": [{"id": message_id}]}


def _handler(fake: FakeGraph) -> type[BaseHTTPRequestHandler]:
    class Handler(FakeHandler):
        def _serve(self, method: str) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            token = (self.headers.get("authorization") or "").removeprefix("Bearer ")
            path = urlsplit(self.path).path
            if path.startswith("/download/"):
                found = fake.media.get(path.removeprefix("/download/"))
                status = 401 if token != fake.token else 200 if found is not None else 404
                self.reply(status, found[0] if found and status == 200 else b"", "application/octet-stream")
                return
            content_type = self.headers.get("content-type") or ""
            body: Any = parse_multipart(content_type, raw) if content_type.startswith("multipart/") else json.loads(raw) if raw else {}
            if method == "POST" and path.endswith("/messages") and body.get("status") != "read":
                with fake.lock:
                    queued = bool(fake.failures)
                    failure = fake.failures.pop(0) if queued else None
                if queued and failure is None:
                    with fake.lock:
                        fake.dropped.append(body)
                        fake.lock.notify_all()
                    self.close_connection = True  # no answer at all: read, and the connection failed
                    return
                if failure is not None:
                    self.reply(failure[0], json.dumps(failure[1]).encode())
                    return
            status, reply = fake.answer(method, path.removeprefix("/v20.0/"), token, body)
            self.reply(status, json.dumps(reply).encode())

        def do_GET(self) -> None:  # noqa: N802 - the http.server API
            self._serve("GET")

        def do_POST(self) -> None:  # noqa: N802
            self._serve("POST")

    return Handler


@contextmanager
def fake_graph() -> Iterator[FakeGraph]:
    """A running fake Graph API on 127.0.0.1; stopped at the end."""
    fake = FakeGraph()
    with serving(_handler(fake)) as url:
        fake.url = url
        yield fake


# -- the webhook's side: what Meta posts ------------------------------------------------------------


def event(*messages: dict[str, Any], statuses: tuple[dict[str, Any], ...] = (), phone_id: str = PHONE_ID,
          names: dict[str, str] | None = None) -> dict[str, Any]:
    """A webhook event holding ``messages`` (each from its ``from``) and ``statuses``."""
    senders = {m["from"] for m in messages if isinstance(m.get("from"), str)}
    value = {"messaging_product": "whatsapp", "metadata": {"display_phone_number": NUMBER, "phone_number_id": phone_id},
             "contacts": [{"profile": {"name": (names or {}).get(s, f"User {s[-4:]}")}, "wa_id": s} for s in senders],
             "messages": list(messages)}
    if statuses:
        value["statuses"] = list(statuses)
    return {"object": "whatsapp_business_account", "entry": [{"id": "WABA", "changes": [{"value": value, "field": "messages"}]}]}


def text(sender: str, body: str, message_id: str | None = None) -> dict[str, Any]:
    """A user's text message."""
    return {"from": sender, "id": message_id or new_wamid(), "timestamp": "1700000000", "type": "text", "text": {"body": body}}


def pressed(sender: str, data: str, title: str, *, row: bool = False) -> dict[str, Any]:
    """A user's press of a reply button (or a list's row) the bot sent."""
    part = {"type": "list_reply", "list_reply": {"id": data, "title": title}} if row else {"type": "button_reply", "button_reply": {"id": data, "title": title}}
    return {"from": sender, "id": new_wamid(), "timestamp": "1700000000", "type": "interactive", "interactive": part}


def new_wamid() -> str:
    """A fresh message id, as WhatsApp writes them."""
    return f"wamid.{secrets.token_hex(16)}"


def post_event(api_url: str, payload: Any, *, secret: str = APP_SECRET, raw: bytes | None = None,
               signed: str | None = None) -> httpx2.Response:
    """POST ``payload`` (or ``raw`` bytes) to the daemon's webhook, signed with ``secret`` as Meta signs
    (or with the header ``signed`` as given)."""
    body = raw if raw is not None else json.dumps(payload).encode()
    header = signed if signed is not None else signature(secret, body)
    return httpx2.post(f"{api_url}/whatsapp/webhook", content=body, timeout=10,
                       headers={"content-type": "application/json", SIGNATURE_HEADER: header})
