"""A fake Telegram Bot API on loopback: the documented request and reply shapes, in a thread.

``/bot<TOKEN>/<method>`` with a JSON (or, for uploads, multipart) body answers ``{"ok": true, "result":
...}`` or ``{"ok": false, "error_code", "description", "parameters"}``. ``getUpdates`` long-polls: it
waits up to its ``timeout`` for updates at or after ``offset``, and forgets those before it, as Telegram
does. ``getFile`` names a file that ``GET /file/bot<TOKEN>/<path>`` serves. Tests push user messages
(text, photos, in private chats or groups), button presses, queue one-off failures (a 429 with
``retry_after``), and read what the bot sent, edited and uploaded.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.platform.fake_http import FakeHandler, FakePlatform, parse_multipart, serving

TOKEN = "123456:TEST-token-never-logged"


class FakeTelegram(FakePlatform):
    """The fake's state; ``url`` is its base URL once started."""

    def __init__(self) -> None:
        super().__init__()
        self.updates: list[dict[str, Any]] = []
        self.next_update = 1
        self.calls: list[str] = []
        self.failures: dict[str, list[tuple[int, dict[str, Any]]]] = {}
        self.next_message = 1000
        self.edits: list[dict[str, Any]] = []
        self.uploads: list[dict[str, Any]] = []
        self.answered: list[dict[str, Any]] = []
        self.files: dict[str, bytes] = {}
        self.url = ""

    def push(self, chat_id: int, user_id: int, text: str, *, group: bool = False, **extra: Any) -> int:
        """A user's message (a private chat, or a group with ``group``); its update id. ``extra`` adds
        fields to the message (``photo``, ``reply_to_message`` ...)."""
        message = {
            "date": int(time.time()), "text": text, "chat": {"id": chat_id, "type": "supergroup" if group else "private"},
            "from": {"id": user_id, "is_bot": False, "first_name": "U"}, **extra,
        }
        return self._update("message", message)

    def push_photo(self, chat_id: int, user_id: int, data: bytes, caption: str = "") -> int:
        """A user's photo (in two sizes, as Telegram sends them), served by ``getFile``."""
        with self.lock:
            self.files["photos/large.jpg"] = data
        sizes = [
            {"file_id": "small-id", "file_unique_id": "s", "width": 90, "height": 90, "file_size": 10},
            {"file_id": "large-id", "file_unique_id": "l", "width": 800, "height": 600, "file_size": len(data)},
        ]
        message = {"date": int(time.time()), "chat": {"id": chat_id, "type": "private"}, "photo": sizes,
                   "from": {"id": user_id, "is_bot": False, "first_name": "U"}, **({"caption": caption} if caption else {})}
        return self._update("message", message)

    def push_voice(self, chat_id: int, user_id: int, data: bytes) -> int:
        """A user's voice note (Opus in OGG, as Telegram records them), served by ``getFile``."""
        with self.lock:
            self.files["voice/file_1.oga"] = data
        voice = {"file_id": "voice-id", "file_unique_id": "v", "duration": 2, "mime_type": "audio/ogg", "file_size": len(data)}
        message = {"date": int(time.time()), "chat": {"id": chat_id, "type": "private"}, "voice": voice,
                   "from": {"id": user_id, "is_bot": False, "first_name": "U"}}
        return self._update("message", message)

    def push_raw(self, update: dict[str, Any]) -> None:
        """An update exactly as given (a malformed one, for the bot's robustness)."""
        with self.lock:
            self.updates.append(update)
            self.next_update = max(self.next_update, int(update.get("update_id") or 0) + 1)
            self.lock.notify_all()

    def press(self, chat_id: int, user_id: int, data: str) -> int:
        """A user presses an inline button whose ``callback_data`` is ``data``."""
        query = {"id": f"cb{self.next_update}", "from": {"id": user_id, "is_bot": False, "first_name": "U"},
                 "message": {"message_id": 1, "chat": {"id": chat_id, "type": "private"}}, "data": data}
        return self._update("callback_query", query)

    def _update(self, kind: str, payload: dict[str, Any]) -> int:
        with self.lock:
            update_id = self.next_update
            self.next_update += 1
            if kind == "message":
                payload = {"message_id": update_id, **payload}
            self.updates.append({"update_id": update_id, kind: payload})
            self.lock.notify_all()
        return update_id

    def sent_with_buttons(self, chat_id: int) -> list[dict[str, Any]]:
        """The messages sent to a chat with an inline keyboard."""
        with self.lock:
            return [m for m in self.sent if m["chat_id"] == chat_id and m.get("reply_markup")]

    def fail_next(self, method: str, status: int, reply: dict[str, Any]) -> None:
        """Answer the next call of ``method`` with ``status`` and ``reply`` (then normally again)."""
        with self.lock:
            self.failures.setdefault(method, []).append((status, reply))

    def texts_to(self, chat_id: int) -> list[str]:
        """What the bot sent to a chat, in order."""
        with self.lock:
            return [m["text"] for m in self.sent if m["chat_id"] == chat_id]

    def wait_for_texts(self, chat_id: int, count: int, timeout: float = 30.0) -> list[str]:
        """Block until the bot has sent ``count`` texts to ``chat_id``."""
        self.wait_until(lambda: len(self.texts_to_locked(chat_id)) >= count, f"{count} texts to {chat_id}", timeout)
        return self.texts_to(chat_id)

    def texts_to_locked(self, chat_id: int) -> list[str]:
        return [m["text"] for m in self.sent if m["chat_id"] == chat_id]

    def answer(self, method: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self.lock:
            self.calls.append(method)
            self.lock.notify_all()
            queued = self.failures.get(method)
            if queued:
                return queued.pop(0)
        if method == "getMe":
            return 200, {"ok": True, "result": {"id": 42, "is_bot": True, "username": "hermes_test_bot"}}
        if method == "getUpdates":
            return 200, {"ok": True, "result": self._updates(int(body.get("offset") or 0), float(body.get("timeout") or 0))}
        if method == "sendMessage":
            with self.lock:
                self.next_message += 1
                self.sent.append({"chat_id": body["chat_id"], "text": body["text"], "parse_mode": body.get("parse_mode"),
                                  "reply_markup": body.get("reply_markup"), "message_id": self.next_message})
                self.lock.notify_all()
                message_id = self.next_message
            return 200, {"ok": True, "result": {"message_id": message_id, "chat": {"id": body["chat_id"]}, "text": body["text"]}}
        if method == "sendChatAction":
            return 200, {"ok": True, "result": True}
        if method in ("editMessageText", "answerCallbackQuery", "sendPhoto", "sendDocument"):
            with self.lock:
                {"editMessageText": self.edits, "answerCallbackQuery": self.answered}.get(method, self.uploads).append(
                    {"method": method, **body}
                )
                self.lock.notify_all()
            return 200, {"ok": True, "result": True if method != "sendPhoto" else {"message_id": 1}}
        if method == "getFile":
            path = {"large-id": "photos/large.jpg", "voice-id": "voice/file_1.oga"}.get(str(body.get("file_id")))
            if path is None:
                return 400, {"ok": False, "error_code": 400, "description": "Bad Request: invalid file_id"}
            return 200, {"ok": True, "result": {"file_id": body["file_id"], "file_path": path}}
        return 404, {"ok": False, "error_code": 404, "description": "Not Found: method not found"}

    def _updates(self, offset: int, timeout: float) -> list[dict[str, Any]]:
        deadline = time.monotonic() + min(timeout, 2.0)  # short polls keep the tests' shutdowns quick
        with self.lock:
            self.updates = [u for u in self.updates if u["update_id"] >= offset]  # confirmed ones are gone
            while not self.updates and time.monotonic() < deadline:
                self.lock.wait(deadline - time.monotonic())
            return list(self.updates)


def _handler(fake: FakeTelegram) -> type[BaseHTTPRequestHandler]:
    class Handler(FakeHandler):
        def do_GET(self) -> None:  # noqa: N802 - the http.server API
            prefix = f"/file/bot{TOKEN}/"
            data = fake.files.get(self.path[len(prefix):]) if self.path.startswith(prefix) else None
            self.reply(200 if data is not None else 404, data or b"", "application/octet-stream")

        def do_POST(self) -> None:  # noqa: N802 - the http.server API
            prefix, _, method = self.path.rpartition("/")
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length)
            content_type = self.headers.get("content-type") or ""
            body = parse_multipart(content_type, raw) if content_type.startswith("multipart/") else json.loads(raw or b"{}")
            if prefix != f"/bot{TOKEN}":
                status, reply = 401, {"ok": False, "error_code": 401, "description": "Unauthorized"}
            else:
                status, reply = fake.answer(method, body)
            self.reply(status, json.dumps(reply).encode())

    return Handler


@contextmanager
def fake_telegram() -> Iterator[FakeTelegram]:
    """A running fake on 127.0.0.1; stopped at the end."""
    fake = FakeTelegram()
    with serving(_handler(fake)) as url:
        fake.url = url
        yield fake
