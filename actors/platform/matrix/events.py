"""A Matrix ``/sync`` answer read into what the bot acts on: invites, users' messages and reactions.

Each reader takes one event as the homeserver sent it and gives what it means, or None for an event that
is not as the spec writes it (counted and logged by the bot, never raised). Edits (``m.replace``) of a
user's message and notices (``m.notice``, what bots send) are not messages to answer.
"""

from __future__ import annotations

import re
from typing import Any

import attrs

from actors.platform.gateway.port import ChatRef, Incoming, RemoteFile, file_kind
from messages.wire_shapes import wire_object

__all__ = ["Invite", "Reaction", "read_invite", "read_message", "read_reaction"]

#: Message types with a file, and the kind each is when the file names no type.
FILE_TYPES = {"m.image": "image", "m.audio": "audio", "m.video": "video", "m.file": "document"}
TEXT_TYPES = frozenset({"m.text", "m.emote"})


@attrs.frozen
class Invite:
    """The bot was invited to ``room`` by ``inviter``; ``direct`` when the inviter marked it a DM."""

    room: str
    inviter: str
    direct: bool


@attrs.frozen
class Reaction:
    """``sender`` reacted with ``key`` to the event ``target`` in ``room``."""

    room: str
    sender: str
    target: str
    key: str


def read_invite(room: str, invite_state: Any, user_id: str) -> Invite | None:
    """The invite of ``user_id`` in a room's ``invite_state``; None when there is none."""
    for event in wire_object(invite_state).get("events") or ():
        event = wire_object(event)
        content = wire_object(event.get("content"))
        if event.get("type") == "m.room.member" and event.get("state_key") == user_id and content.get("membership") == "invite":
            sender = event.get("sender")
            if isinstance(sender, str) and sender:
                return Invite(room, sender, content.get("is_direct") is True)
    return None


def read_message(room: str, event: dict[str, Any], user_id: str, *, private: bool) -> Incoming | None:
    """A user's ``m.room.message``, the bot's own mention removed from its text; None when malformed."""
    content, sender = wire_object(event.get("content")), event.get("sender")
    msgtype, body = content.get("msgtype"), content.get("body")
    if not isinstance(sender, str) or not sender.startswith("@") or not isinstance(body, str):
        return None
    relation = wire_object(content.get("m.relates_to"))
    thread = relation.get("event_id") if relation.get("rel_type") == "m.thread" else None
    files: tuple[RemoteFile, ...] = ()
    if msgtype in FILE_TYPES:
        info, url = wire_object(content.get("info")), content.get("url")
        if not isinstance(url, str):
            return None
        mimetype, size = info.get("mimetype"), info.get("size")
        kind = file_kind(mimetype) if isinstance(mimetype, str) else FILE_TYPES[msgtype]
        files = (RemoteFile(kind, url, body or "file", size if isinstance(size, int) else None),)
        body = ""
    elif msgtype not in TEXT_TYPES:
        return None
    mentioned = user_id in (wire_object(content.get("m.mentions")).get("user_ids") or ()) or user_id in body
    text = re.sub(rf"^\s*{re.escape(user_id)}:?\s*", "", body) if mentioned else body
    return Incoming(
        ChatRef("matrix", room, thread if isinstance(thread, str) else None), sender, sender, text,
        private=private, addressed=private or mentioned, files=files,
    )


def read_reaction(room: str, event: dict[str, Any]) -> Reaction | None:
    """An ``m.reaction`` (an annotation of another event); None when malformed."""
    relation = wire_object(wire_object(event.get("content")).get("m.relates_to"))
    sender, target, key = event.get("sender"), relation.get("event_id"), relation.get("key")
    if relation.get("rel_type") != "m.annotation" or not all(isinstance(x, str) and x for x in (sender, target, key)):
        return None
    return Reaction(room, str(sender), str(target), str(key))
