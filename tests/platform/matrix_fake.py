"""A fake Matrix homeserver on loopback: the client-server API a bot uses, as the spec writes it.

``GET /account/whoami``; ``GET /sync`` (a long poll: it answers as soon as there is news after ``since``,
or when its ``timeout`` runs out; without ``since`` it answers at once with the current position and
the rooms' history, as a first sync does), with the events the test pushes and those the bot sent
(its own echo, as a homeserver sends it); ``PUT /rooms/{id}/send/{type}/{txnId}`` (idempotent per
transaction id: a repeated one gets the first event's id and adds nothing), ``PUT .../redact/...``,
``PUT .../typing/...``, ``POST /join/{room}``, ``POST /rooms/{id}/leave``, ``GET /directory/room/{alias}``,
the media upload and the authenticated media download. Every request needs ``Authorization: Bearer`` the token, else ``401
M_UNKNOWN_TOKEN``. The test can answer the next send with a 429 ``M_LIMIT_EXCEEDED`` and its
``retry_after_ms``, take the next send and answer it with a 500 (a lost answer), and fail or drop the
next syncs.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from tests.platform.fake_http import FakeHandler, FakePlatform, serving

TOKEN = "syt_TEST-matrix-token-never-logged"
BOT = "@hermes:fake.test"
CLIENT = "/_matrix/client/v3"


class FakeMatrix(FakePlatform):
    """The fake's state; ``homeserver`` once started. ``sent`` holds every event the bot sent."""

    def __init__(self) -> None:
        super().__init__()
        self.token = TOKEN
        self.homeserver = ""
        self.timeline: list[tuple[str, dict[str, Any]]] = []  # (room, event), in order: a sync position is an index
        self.members: dict[str, int] = {}
        self.invites: dict[str, tuple[int, dict[str, Any]]] = {}  # room -> (position, the membership event)
        self.aliases: dict[str, str] = {}
        self.txns: dict[str, str] = {}
        self.joins: list[str] = []
        self.leaves: list[str] = []
        self.redactions: list[str] = []
        self.syncs: list[dict[str, str]] = []
        self.send_failures: list[tuple[int, dict[str, Any]]] = []
        self.sync_failures: list[int] = []  # a status, or 0: the connection is closed without an answer
        self.lost_answers = self.duplicate_txns = self.rate_limited = 0
        self.next_event = 0
        self.media: dict[str, bytes] = {}  # "server/id" -> bytes: users' files, and the bot's uploads

    # -- what the test does ---------------------------------------------------------------------

    def add_room(self, room: str, members: int) -> None:
        """A room the bot is in, with ``members`` joined (two: a direct message)."""
        with self.lock:
            self.members[room] = members

    def push_message(self, room: str, sender: str, body: str, **content: Any) -> str:
        """A user's ``m.text`` message (``content`` adds or replaces fields); its event id."""
        return self.push_event(room, {"type": "m.room.message", "sender": sender, "content": {"msgtype": "m.text", "body": body, **content}})

    def push_reaction(self, room: str, sender: str, target: str, key: str) -> str:
        """A user's reaction ``key`` to the event ``target``."""
        content = {"m.relates_to": {"rel_type": "m.annotation", "event_id": target, "key": key}}
        return self.push_event(room, {"type": "m.reaction", "sender": sender, "content": content})

    def push_event(self, room: str, event: dict[str, Any]) -> str:
        """Any event, given its id and timestamp; its event id."""
        with self.lock:
            self.next_event += 1
            event = {"event_id": f"$ev{self.next_event}", "origin_server_ts": int(time.time() * 1000), **event}
            self.timeline.append((room, event))
            self.lock.notify_all()
            return str(event["event_id"])

    def push_raw(self, room: str, event: Any) -> None:
        """Anything as a timeline event, exactly as given (a malformed one, for the bot's robustness)."""
        with self.lock:
            self.timeline.append((room, event))
            self.lock.notify_all()

    def push_invite(self, room: str, inviter: str, *, direct: bool) -> None:
        """``inviter`` invites the bot to ``room`` (marked a direct message when ``direct``)."""
        event = {"type": "m.room.member", "state_key": BOT, "sender": inviter, "content": {"membership": "invite", "is_direct": direct}}
        with self.lock:
            self.invites[room] = (len(self.timeline) + 1, event)
            self.timeline.append(("", {}))  # a position for the invite, so a waiting sync wakes
            self.lock.notify_all()

    def fail_next_send(self, status: int, body: dict[str, Any]) -> None:
        """Answer the next message send with ``status`` and ``body``."""
        with self.lock:
            self.send_failures.append((status, body))

    def lose_next_answer(self) -> None:
        """Take the next message send, then answer it with a 500 as if the answer were lost."""
        with self.lock:
            self.lost_answers += 1

    def fail_next_sync(self, status: int) -> None:
        """Answer the next sync with ``status`` (0: close the connection without an answer)."""
        with self.lock:
            self.sync_failures.append(status)
            self.lock.notify_all()

    def revoke(self) -> None:
        """The token is revoked: every request with it is refused from now on."""
        with self.lock:
            self.token = "syt_revoked"

    def messages_to(self, room: str) -> list[dict[str, Any]]:
        """The message contents the bot sent to a room, in order (not edits)."""
        with self.lock:
            return [e["content"] for r, e in self.sent_events() if r == room and e["type"] == "m.room.message"
                    and e["content"].get("m.relates_to", {}).get("rel_type") != "m.replace"]

    def texts_to(self, room: str) -> list[str]:
        """The bodies of the bot's messages to a room, in order."""
        return [m["body"] for m in self.messages_to(room)]

    def wait_for_texts(self, room: str, count: int, timeout: float = 30.0) -> list[str]:
        """Block until the bot has sent ``count`` messages to ``room``."""
        self.wait_until(lambda: len(self.messages_to(room)) >= count, f"{count} messages to {room}", timeout)
        return self.texts_to(room)

    def sent_events(self) -> list[tuple[str, dict[str, Any]]]:
        """Every event the bot sent, with its room."""
        with self.lock:
            return [(m["room"], m["event"]) for m in self.sent]

    def edits_of(self, event_id: str) -> list[str]:
        """The new bodies of the bot's edits of one of its messages."""
        return [e["content"]["m.new_content"]["body"] for _, e in self.sent_events()
                if e["content"].get("m.relates_to", {}) == {"rel_type": "m.replace", "event_id": event_id}]

    def reactions(self) -> list[tuple[str, str]]:
        """The bot's reactions: (the event reacted to, the key)."""
        return [(e["content"]["m.relates_to"]["event_id"], e["content"]["m.relates_to"]["key"])
                for _, e in self.sent_events() if e["type"] == "m.reaction"]

    # -- the API (in the HTTP server's threads) -------------------------------------------------------

    def sync(self, query: dict[str, str]) -> tuple[int, dict[str, Any]] | None:
        """A sync's answer (None: close the connection without one)."""
        with self.lock:
            self.syncs.append(query)
            since = int(query["since"].removeprefix("s")) if "since" in query else None
            deadline = time.monotonic() + int(query.get("timeout", "0")) / 1000
            while since is not None and len(self.timeline) <= since and not self.sync_failures and time.monotonic() < deadline:
                self.lock.wait(min(0.2, max(0.0, deadline - time.monotonic())))
            if self.sync_failures:
                status = self.sync_failures.pop(0)
                return None if status == 0 else (status, {"errcode": "M_UNKNOWN", "error": "the homeserver is unwell"})
            position = len(self.timeline)
            join: dict[str, Any] = {room: {"summary": {"m.joined_member_count": n}, "timeline": {"events": []}} for room, n in self.members.items()}
            for room, event in self.timeline[since or 0:]:
                if room in join:
                    join[room]["timeline"]["events"].append(event)
            invite = {room: {"invite_state": {"events": [event]}} for room, (at, event) in self.invites.items() if since is None or at > since}
            return 200, {"next_batch": f"s{position}", "rooms": {"join": join, "invite": invite}}

    def send(self, room: str, event_type: str, txn: str, content: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self.lock:
            if event_type == "m.room.message" and self.send_failures:
                self.rate_limited += 1
                return self.send_failures.pop(0)
            if txn in self.txns:
                self.duplicate_txns += 1
                return 200, {"event_id": self.txns[txn]}
            self.next_event += 1
            event = {"event_id": f"$bot{self.next_event}", "type": event_type, "sender": BOT, "content": content}
            self.txns[txn] = event["event_id"]
            self.sent.append({"room": room, "txn": txn, "event": event})
            self.timeline.append((room, {**event, "unsigned": {"transaction_id": txn}}))  # the sender's own echo
            self.lock.notify_all()
            if event_type == "m.room.message" and self.lost_answers:
                self.lost_answers -= 1
                return 500, {"errcode": "M_UNKNOWN", "error": "lost on the way back"}
            return 200, {"event_id": event["event_id"]}

    def answer(self, method: str, path: str, query: dict[str, str], body: Any) -> tuple[int, dict[str, Any]] | None:
        parts = [unquote(p) for p in path.removeprefix(CLIENT).strip("/").split("/")]
        if parts == ["account", "whoami"]:
            return 200, {"user_id": BOT, "device_id": "FAKEDEVICE"}
        if parts == ["sync"]:
            return self.sync(query)
        with self.lock:
            if method == "POST" and parts[0] == "join":
                self.joins.append(parts[1])
                self.invites.pop(parts[1], None)
                self.members.setdefault(parts[1], 2)
                self.lock.notify_all()
                return 200, {"room_id": parts[1]}
            if method == "POST" and parts[0] == "rooms" and parts[2] == "leave":
                self.leaves.append(parts[1])
                self.invites.pop(parts[1], None)
                self.lock.notify_all()
                return 200, {}
            if method == "GET" and parts[:2] == ["directory", "room"]:
                room = self.aliases.get(parts[2])
                return (200, {"room_id": room, "servers": ["fake.test"]}) if room else (404, {"errcode": "M_NOT_FOUND", "error": "no such alias"})
            if method == "PUT" and parts[0] == "rooms" and parts[2] == "typing":
                return 200, {}
            if method == "PUT" and parts[0] == "rooms" and parts[2] == "redact":
                self.redactions.append(parts[3])
                self.lock.notify_all()
                return 200, {"event_id": f"$redaction{len(self.redactions)}"}
        if method == "PUT" and parts[0] == "rooms" and parts[2] == "send":
            return self.send(parts[1], parts[3], parts[4], body)
        return 404, {"errcode": "M_UNRECOGNIZED", "error": "not in the fake"}


def _handler(fake: FakeMatrix) -> type[BaseHTTPRequestHandler]:
    class Handler(FakeHandler):
        def _serve(self, method: str) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            if self.headers.get("authorization") != f"Bearer {fake.token}":
                self.reply(401, json.dumps({"errcode": "M_UNKNOWN_TOKEN", "error": "Invalid access token passed."}).encode())
                return
            url = urlsplit(self.path)
            if url.path == "/_matrix/media/v3/upload":
                with fake.lock:
                    media = f"fake.test/up{len(fake.media)}"
                    fake.media[media] = raw
                self.reply(200, json.dumps({"content_uri": f"mxc://{media}"}).encode())
                return
            if url.path.startswith("/_matrix/client/v1/media/download/"):
                data = fake.media.get(unquote(url.path.removeprefix("/_matrix/client/v1/media/download/")))
                self.reply(200 if data is not None else 404, data or b"", "application/octet-stream")
                return
            query = {k: v[0] for k, v in parse_qs(url.query).items()}
            body = json.loads(raw) if raw and self.headers.get("content-type", "").startswith("application/json") else None
            answer = fake.answer(method, url.path, query, body)
            if answer is None:
                self.close_connection = True
                self.connection.close()
                return
            status, reply = answer
            self.reply(status, json.dumps(reply).encode())

        def do_GET(self) -> None:  # noqa: N802 - the http.server API
            self._serve("GET")

        def do_POST(self) -> None:  # noqa: N802
            self._serve("POST")

        def do_PUT(self) -> None:  # noqa: N802
            self._serve("PUT")

    return Handler


@contextmanager
def fake_matrix() -> Iterator[FakeMatrix]:
    """A running fake homeserver on 127.0.0.1; stopped at the end."""
    fake = FakeMatrix()
    with serving(_handler(fake)) as url:
        fake.homeserver = url
        yield fake
