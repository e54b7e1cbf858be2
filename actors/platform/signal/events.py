"""signal-cli's event stream read into the gateway's terms. Pure functions; anything not as signal-cli
writes it is None.

``GET /api/v1/events`` is a server-sent event stream: each event is ``id:``, ``event: receive`` and one
``data:`` line of JSON, ended by a blank line; a line starting ``:`` is a keep-alive (every 15 s). The data
is ``{"envelope": {...}, "account": "+BOT"}``, the envelope naming its sender (``sourceNumber``,
``sourceUuid``, ``sourceName``), its ``timestamp`` (which is the message's id on Signal: reactions and
quotes name a message by its author and timestamp) and one of ``dataMessage`` (a user's message: its
``message``, ``attachments`` with ``id``/``contentType``/``filename``/``size``, ``groupInfo.groupId``,
``quote`` with ``id``/``author``, ``mentions`` with ``number``/``uuid``/``start``/``length``, each mention
written in the text as U+FFFC), ``syncMessage`` (what the account's other devices sent: a ``sentMessage`` to
the account itself is a Note to Self, which the bot answers when the bot is linked to its owner's own
number), ``typingMessage``, ``receiptMessage`` or ``storyMessage``.

Where an answer goes: a direct message is answered to its sender, a group's message in the group
(``group:GROUP_ID``, as Hermes names a Signal group).
"""

from __future__ import annotations

import json
import mimetypes
import re
from typing import Any

import attrs

from actors.platform.gateway.port import ChatRef, Incoming, RemoteFile, file_kind
from messages.wire_shapes import wire_int, wire_object, wire_text

__all__ = ["GROUP", "PLATFORM", "Message", "ServerSentEvent", "SseReader", "read_envelope", "well_formed"]

PLATFORM = "signal"
#: How a group's chat id starts (``group:GROUP_ID``).
GROUP = "group:"
_PLACEHOLDER = "\ufffc"
#: Extensions of the types Signal's apps send that Python's table lacks.
_EXTENSIONS = {"audio/ogg": ".ogg", "audio/x-m4a": ".m4a", "audio/mp4": ".m4a"}


@attrs.frozen
class ServerSentEvent:
    """One event of the stream: its id (None when it had none), its type and its data."""

    id: str | None
    event: str
    data: str


class SseReader:
    """Lines of a server-sent event stream in, events out (the standard's rules, as signal-cli writes them)."""

    def __init__(self) -> None:
        self._id: str | None = None
        self._event = ""
        self._data: list[str] = []

    def line(self, line: str) -> ServerSentEvent | None:
        """Take one line (without its end); the event it completes, if it is the blank line ending one."""
        if not line:
            if not self._data and not self._event:
                return None
            event = ServerSentEvent(self._id, self._event or "message", "\n".join(self._data))
            self._id, self._event, self._data = None, "", []
            return event
        if line.startswith(":"):
            return None  # a keep-alive
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._event = value
        elif field == "id":
            self._id = value
        return None


@attrs.frozen
class Message:
    """A user's message: the gateway's :class:`Incoming`, and how Signal names it (its author and timestamp)."""

    incoming: Incoming
    author: str
    timestamp: int
    quote_author: str = ""
    quote_id: int | None = None
    #: Written by the account's owner to themselves (Signal's Note to Self), from another of their devices.
    note_to_self: bool = False


def _text(data: dict[str, Any]) -> str:
    """The message's text with each mention written out (``@+NUMBER``), from the last so positions hold."""
    text = wire_text(data.get("message"))
    mentions = [wire_object(m) for m in data.get("mentions") or ()] if isinstance(data.get("mentions"), list) else []
    for mention in sorted(mentions, key=lambda m: wire_int(m.get("start")) or 0, reverse=True):
        start, length = wire_int(mention.get("start")), wire_int(mention.get("length"))
        if start is None or length is None or text[start:start + length] != _PLACEHOLDER * length:
            continue
        who = wire_text(mention.get("number")) or wire_text(mention.get("uuid")) or "someone"
        text = f"{text[:start]}@{who}{text[start + length:]}"
    return text


def _files(data: dict[str, Any]) -> tuple[RemoteFile, ...]:
    files = []
    listed = data.get("attachments")
    for attachment in map(wire_object, listed if isinstance(listed, list) else ()):
        attachment_id = wire_text(attachment.get("id"))
        if not attachment_id:
            continue
        content_type, name = wire_text(attachment.get("contentType")), wire_text(attachment.get("filename"))
        kind = file_kind(content_type)
        if kind == "audio" and (attachment.get("voiceNote") is True or not name):
            kind = "voice"  # a recorded voice note comes without a file name
        # Without a name, the type's extension: a transcription service goes by it (Android's voice notes are AAC).
        name = name or kind + (mimetypes.guess_extension(content_type) or _EXTENSIONS.get(content_type, ""))
        files.append(RemoteFile(kind, attachment_id, name, wire_int(attachment.get("size"))))
    return tuple(files)


def read_envelope(data: str, account: str, bot_ids: frozenset[str]) -> Message | None:
    """A ``receive`` event's data as the gateway reads it; None when it is not a user's message (the
    account's own, a receipt, typing, a story, a reaction, another account's, or neither text nor file)
    or not as signal-cli writes it.

    Args:
        data: the event's JSON.
        account: the bot's account (its number).
        bot_ids: the bot's own ids (its number, and its uuid once known): mentions and quotes of these
            address the bot.
    """
    try:
        event = json.loads(data)
    except ValueError:
        return None
    if not isinstance(event, dict):
        return None
    if wire_text(event.get("account")) not in ("", account):
        return None
    envelope = wire_object(event.get("envelope"))
    message = wire_object(envelope.get("dataMessage"))
    author = wire_text(envelope.get("sourceNumber")) or wire_text(envelope.get("sourceUuid")) or wire_text(envelope.get("source"))
    timestamp = wire_int(envelope.get("timestamp"))
    note = _note_to_self(envelope, account)
    if note:
        message = note  # the account's owner writing to themselves from their phone: the bot's a linked device
    elif author in bot_ids:
        return None
    if not message or not author or timestamp is None or message.get("reaction"):
        return None
    text, files = _text(message).strip(), _files(message)
    if not text and not files:
        return None  # a profile key update, a deleted message ...
    group = wire_text(wire_object(message.get("groupInfo")).get("groupId"))
    private = not group
    quote = wire_object(message.get("quote"))
    quote_author = wire_text(quote.get("authorNumber")) or wire_text(quote.get("author")) or wire_text(quote.get("authorUuid"))
    mentioned = any(f"@{bot}" in text for bot in bot_ids)
    for bot in bot_ids:
        text = text.replace(f"@{bot}", "")
    text = re.sub(r"  +", " ", text).strip() if mentioned else text
    chat = ChatRef(PLATFORM, author if private else f"{GROUP}{group}")
    name = wire_text(envelope.get("sourceName")) or author
    addressed = private or mentioned or quote_author in bot_ids
    return Message(Incoming(chat, author, name, text, private, addressed, files), author, timestamp, quote_author,
                   wire_int(quote.get("id")), bool(note))


def _note_to_self(envelope: dict[str, Any], account: str) -> dict[str, Any]:
    """The message of a Note to Self the account sent from another of its devices (a ``syncMessage``'s
    ``sentMessage`` to the account itself, not to a group); empty for anything else."""
    sent = wire_object(wire_object(envelope.get("syncMessage")).get("sentMessage"))
    to = wire_text(sent.get("destinationNumber")) or wire_text(sent.get("destination"))
    return sent if to == account and not wire_object(sent.get("groupInfo")) else {}


def well_formed(data: str) -> bool:
    """Whether a ``receive`` event's data is an envelope as signal-cli writes it (a sender's, with its
    timestamp), whatever it holds."""
    try:
        event = json.loads(data)
    except ValueError:
        return False
    envelope = wire_object(wire_object(event).get("envelope"))
    return wire_int(envelope.get("timestamp")) is not None and bool(envelope.get("sourceNumber") or envelope.get("sourceUuid") or envelope.get("source"))
