"""Telegram's updates read into the gateway's terms: a message as :class:`Incoming`, a button as
:class:`ButtonPress`. Pure functions of the update's JSON and the bot's own identity."""

from __future__ import annotations

import re
from typing import Any

import attrs

from actors.platform.gateway.port import ButtonPress, ChatRef, Incoming, RemoteFile
from messages.wire_shapes import wire_int, wire_object

__all__ = ["BotIdentity", "read_button", "read_message"]

PLATFORM = "telegram"


@attrs.frozen
class BotIdentity:
    """Who the bot is (``getMe``): how it is mentioned and replied to."""

    user_id: int
    username: str


def _chat(message: dict[str, Any]) -> ChatRef | None:
    chat = wire_object(message.get("chat"))
    if not isinstance(chat.get("id"), int):
        return None
    thread = message.get("message_thread_id") if message.get("is_topic_message") else None
    return ChatRef(PLATFORM, str(chat["id"]), str(thread) if isinstance(thread, int) else None)


def _files(message: dict[str, Any]) -> tuple[RemoteFile, ...]:
    files = []
    photos = message.get("photo")
    if isinstance(photos, list) and photos and isinstance(photos[-1], dict):
        largest = photos[-1]  # Telegram lists a photo's sizes smallest first
        files.append(RemoteFile("image", str(largest.get("file_id")), "photo.jpg", wire_int(largest.get("file_size"))))
    for field, kind, default in (("document", "document", "document"), ("voice", "voice", "voice.ogg"),
                                 ("audio", "audio", "audio"), ("video", "video", "video.mp4")):
        item = message.get(field)
        if isinstance(item, dict) and item.get("file_id"):
            mime = str(item.get("mime_type") or "")
            named = "image" if kind == "document" and mime.startswith("image/") else kind
            files.append(RemoteFile(named, str(item["file_id"]), str(item.get("file_name") or default), wire_int(item.get("file_size"))))
    return tuple(files)


def read_message(message: dict[str, Any], bot: BotIdentity) -> Incoming | None:
    """The message as the gateway reads it; None when it is not a user's (no chat, no sender, a bot,
    or neither text nor file)."""
    chat, sender = _chat(message), wire_object(message.get("from"))
    if chat is None or not isinstance(sender.get("id"), int) or sender.get("is_bot"):
        return None
    text = message.get("text") or message.get("caption") or ""
    files = _files(message)
    if not isinstance(text, str) or (not text.strip() and not files):
        return None
    private = wire_object(message.get("chat")).get("type") == "private"
    mention = f"@{bot.username}" if bot.username else None
    replied = wire_object(wire_object(message.get("reply_to_message")).get("from")).get("id") == bot.user_id
    mentioned = mention is not None and mention.lower() in text.lower()
    if mention is not None:
        text = re.sub(re.escape(mention) + r"\b", "", text, flags=re.IGNORECASE).strip()
    name = " ".join(str(sender.get(part)) for part in ("first_name", "last_name") if sender.get(part)) or str(sender.get("username") or sender["id"])
    return Incoming(chat, str(sender["id"]), name, text, private, private or replied or mentioned, files)


def read_button(query: dict[str, Any]) -> ButtonPress | None:
    """A ``callback_query`` as a button press; None without its message, sender or data."""
    message, sender, data = wire_object(query.get("message")), wire_object(query.get("from")), query.get("data")
    chat = _chat(message)
    if chat is None or not isinstance(sender.get("id"), int) or not isinstance(data, str):
        return None
    return ButtonPress(chat, str(sender["id"]), data)
