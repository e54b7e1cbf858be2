"""WhatsApp's webhook events read into the gateway's terms. Pure functions of the event's JSON.

An event is ``{"object": "whatsapp_business_account", "entry": [{"changes": [{"field": "messages",
"value": {...}}]}]}``; a value holds ``metadata.phone_number_id`` (the business number written to),
``contacts`` (each sender's ``wa_id`` and ``profile.name``), ``messages`` (each with ``from``, ``id``,
``type`` and a part named by its type) and ``statuses`` (what became of the bot's own messages: ``sent``,
``delivered``, ``read``, or ``failed`` with its ``errors``).

A chat is the user's number (``wa_id``): the Cloud API has no groups, so every message is a direct one.
A pressed reply button or list row (``interactive``) carries the data the bot gave it; a template's
quick-reply button (``button``) is read as the words on it. Images, stickers, audio, voice notes, video and documents
are files to fetch by their media id; a location or a shared contact is given to the model as words.
"""

from __future__ import annotations

from typing import Any

import attrs

from actors.platform.gateway.port import ChatRef, Incoming, RemoteFile
from messages.wire_shapes import wire_object, wire_text

__all__ = ["PLATFORM", "Event", "Failure", "Received", "read_event"]

PLATFORM = "whatsapp"
_MEDIA = ("image", "sticker", "audio", "video", "document")
_EXTENSIONS = {"image/jpeg": ".jpg", "image/png": ".png", "image/webp": ".webp", "audio/ogg": ".ogg",
               "audio/mpeg": ".mp3", "audio/mp4": ".m4a", "audio/aac": ".aac", "audio/amr": ".amr", "video/mp4": ".mp4"}


@attrs.frozen
class Received:
    """A user's message: the gateway's :class:`Incoming`, its id (``wamid``), and the data of the button
    or list row pressed, when it is one."""

    incoming: Incoming
    message_id: str
    pressed: str | None = None


@attrs.frozen
class Failure:
    """One of the bot's messages that Meta could not deliver: to whom, Graph's code and its words."""

    recipient: str
    message_id: str
    code: int | None
    title: str


@attrs.frozen
class Event:
    """What one webhook event holds for the bot; ``skipped`` counts the parts not as documented."""

    received: tuple[Received, ...] = ()
    failures: tuple[Failure, ...] = ()
    skipped: int = 0
    other_numbers: int = 0


def _file(kind: str, part: dict[str, Any], message_id: str) -> RemoteFile | None:
    media_id = part.get("id")
    if not isinstance(media_id, str) or not media_id:
        return None
    mime = wire_text(part.get("mime_type")).split(";")[0].strip().lower()
    if kind == "sticker":
        kind = "image"
    elif kind == "audio":
        kind = "voice" if part.get("voice") is True else "audio"
    name = wire_text(part.get("filename")) or f"{kind}-{message_id[-12:]}{_EXTENSIONS.get(mime, '')}"
    return RemoteFile(kind, media_id, name)


def _words(kind: str, part: Any) -> str:
    """A location or shared contacts as words for the model."""
    if kind == "location":
        place = ", ".join(wire_text(part.get(key)) for key in ("name", "address") if part.get(key))
        return f"[Location: {part.get('latitude')}, {part.get('longitude')}" + (f" ({place})" if place else "") + "]"
    names = [wire_text(wire_object(contact.get("name")).get("formatted_name")) for contact in map(wire_object, part if isinstance(part, list) else ())]
    return "[Shared contact: " + ", ".join(name for name in names if name) + "]"


def _documented(raw: object) -> bool:
    """Whether a message has what every message has: its sender's number, its id and its type."""
    if not isinstance(raw, dict):
        return False
    sender, message_id, kind = raw.get("from"), raw.get("id"), raw.get("type")
    return isinstance(sender, str) and sender.isdigit() and isinstance(message_id, str) and bool(message_id) and isinstance(kind, str)


def _message(raw: dict[str, Any], names: dict[str, str]) -> Received | None:
    sender, message_id, kind = str(raw["from"]), str(raw["id"]), str(raw["type"])
    part = raw.get(kind)
    text, pressed = "", None
    files: tuple[RemoteFile, ...] = ()
    if kind == "text":
        text = wire_text(wire_object(part).get("body"))
    elif kind == "interactive":
        choice = wire_object(wire_object(part).get("button_reply") or wire_object(part).get("list_reply"))
        pressed, text = wire_text(choice.get("id")) or None, wire_text(choice.get("title"))
    elif kind == "button":  # a template's quick reply: the user's words (the template is not the gateway's question)
        text = wire_text(wire_object(part).get("text"))
    elif kind in _MEDIA:
        found = _file(kind, wire_object(part), message_id)
        if found is None:
            return None
        text, files = wire_text(wire_object(part).get("caption")), (found,)
    elif kind == "location" and isinstance(part, dict):
        text = _words(kind, part)
    elif kind == "contacts" and isinstance(part, list):
        text = _words(kind, part)
    else:
        return None  # a reaction, an order, a system notice, an unsupported type: nothing to answer
    if not text.strip() and not files and pressed is None:
        return None
    chat = ChatRef(PLATFORM, sender)
    return Received(Incoming(chat, sender, names.get(sender) or sender, text.strip(), True, True, files), message_id, pressed)


def _failure(status: dict[str, Any]) -> Failure | None:
    if status.get("status") != "failed":
        return None
    errors = status.get("errors")
    error = wire_object(errors[0] if isinstance(errors, list) and errors else None)
    code = error.get("code")
    title = wire_text(error.get("title") or error.get("message")) or "no reason given"
    return Failure(wire_text(status.get("recipient_id")), wire_text(status.get("id")), code if isinstance(code, int) else None, title)


def read_event(payload: dict[str, Any], phone_number_id: str) -> Event:
    """An event's messages to the number ``phone_number_id`` and the failures of the bot's messages;
    anything else is counted, never raised."""
    if payload.get("object") != "whatsapp_business_account" or not isinstance(payload.get("entry"), list):
        return Event(skipped=1)
    received: list[Received] = []
    failures: list[Failure] = []
    skipped = other = 0
    for entry in payload["entry"]:
        changes = wire_object(entry).get("changes")
        for change in changes if isinstance(changes, list) else [None]:
            change = wire_object(change)
            if change.get("field") != "messages":
                skipped += change.get("field") is None
                continue
            value = wire_object(change.get("value"))
            if wire_text(wire_object(value.get("metadata")).get("phone_number_id")) != phone_number_id:
                other += 1
                continue
            names = {wire_text(c.get("wa_id")): wire_text(wire_object(c.get("profile")).get("name")) for c in map(wire_object, _list(value, "contacts"))}
            for raw in _list(value, "messages"):
                if not _documented(raw):
                    skipped += 1
                elif (message := _message(raw, names)) is not None:
                    received.append(message)
            for status in _list(value, "statuses"):
                failure = _failure(status) if isinstance(status, dict) else None
                if failure is not None:
                    failures.append(failure)
    return Event(tuple(received), tuple(failures), skipped, other)


def _list(value: dict[str, Any], key: str) -> list[Any]:
    found = value.get(key)
    return found if isinstance(found, list) else []
