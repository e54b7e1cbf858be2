"""Mattermost's WebSocket ``posted`` events read into the gateway's terms. Pure functions of the event's
JSON; anything not as Mattermost documents it is None.

A ``posted`` event's ``data.post`` is the post as a JSON *string* (``id``, ``user_id``, ``channel_id``,
``root_id``, ``message``, ``type``, ``file_ids``, ``metadata.files``), and ``data.channel_type`` says
``D`` for a direct message, ``G`` for a group message, ``O``/``P`` for a public or private channel.

Where an answer goes: a direct message is answered in the DM (in the thread, when the user wrote in
one); a channel message is answered in a thread under it (``root_id``), or in the thread it came in, so
a conversation in a busy channel stays together and each thread is a session of its own.
"""

from __future__ import annotations

import json
import re
from typing import Any

import attrs

from actors.platform.gateway.port import ChatRef, Incoming, RemoteFile, file_kind
from messages.wire_shapes import wire_int, wire_object, wire_text

__all__ = ["PLATFORM", "Posted", "read_posted"]

PLATFORM = "mattermost"


@attrs.frozen
class Posted:
    """A user's post: the gateway's :class:`Incoming`, and the post's own id."""

    incoming: Incoming
    post_id: str


def _files(post: dict[str, Any]) -> tuple[RemoteFile, ...]:
    described = {str(info.get("id")): info for info in map(wire_object, wire_object(post.get("metadata")).get("files") or ())}
    files = []
    listed = post.get("file_ids")
    for file_id in listed if isinstance(listed, list) else ():
        if isinstance(file_id, str) and file_id:
            info = described.get(file_id, {})
            kind = file_kind(str(info.get("mime_type") or ""))
            files.append(RemoteFile(kind, file_id, str(info.get("name") or kind), wire_int(info.get("size"))))
    return tuple(files)


def read_posted(data: dict[str, Any], bot_id: str, bot_username: str) -> Posted | None:
    """A ``posted`` event's ``data`` as the gateway reads it; None when it is not a user's words (the
    bot's own, a system message, a webhook's, or neither text nor file) or not as documented."""
    try:
        post = json.loads(data["post"]) if isinstance(data.get("post"), str) else None
    except ValueError:
        return None
    if not isinstance(post, dict):
        return None
    post_id, user, channel = post.get("id"), post.get("user_id"), post.get("channel_id")
    if not all(isinstance(value, str) and value for value in (post_id, user, channel)) or user == bot_id:
        return None
    if post.get("type") or wire_object(post.get("props")).get("from_webhook") or wire_object(post.get("props")).get("from_bot"):
        return None  # a system message, or a bot's or webhook's post
    raw, files = wire_text(post.get("message")), _files(post)
    if not raw.strip() and not files:
        return None
    private = data.get("channel_type") == "D"
    root = post.get("root_id") if isinstance(post.get("root_id"), str) and post.get("root_id") else None
    mention = re.compile(rf"(?<![\w.-])@{re.escape(bot_username)}(?![\w-])", re.IGNORECASE) if bot_username else None
    mentioned = mention is not None and mention.search(raw) is not None
    text = mention.sub("", raw).strip() if mention is not None else raw.strip()
    sender = wire_text(data.get("sender_name")).lstrip("@") or str(user)
    chat = ChatRef(PLATFORM, str(channel), root if private else (root or str(post_id)))
    return Posted(Incoming(chat, str(user), sender, text, private, private or mentioned, files), str(post_id))
