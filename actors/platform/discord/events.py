"""Discord's Gateway events read into the gateway's terms: ``MESSAGE_CREATE`` as :class:`Incoming`,
a button's ``INTERACTION_CREATE`` as :class:`ButtonPress`. Pure functions of the event's JSON."""

from __future__ import annotations

import re
from typing import Any

import attrs

from actors.platform.gateway.port import ButtonPress, ChatRef, Incoming, RemoteFile, file_kind
from messages.wire_shapes import wire_int, wire_object, wire_text

__all__ = ["COMPONENT_INTERACTION", "BotUser", "read_interaction", "read_message"]

PLATFORM = "discord"
#: ``INTERACTION_CREATE``'s type for a pressed button (a message component).
COMPONENT_INTERACTION = 3


@attrs.frozen
class BotUser:
    """Who the bot is (``READY``'s user): how it is mentioned and replied to."""

    user_id: str
    username: str


def _files(message: dict[str, Any]) -> tuple[RemoteFile, ...]:
    files = []
    attachments = message.get("attachments")
    for item in attachments if isinstance(attachments, list) else ():
        if isinstance(item, dict) and isinstance(item.get("url"), str):
            kind = file_kind(str(item.get("content_type") or ""))
            files.append(RemoteFile(kind, item["url"], str(item.get("filename") or kind), wire_int(item.get("size"))))
    return tuple(files)


def read_message(message: dict[str, Any], bot: BotUser) -> Incoming | None:
    """The message as the gateway reads it; None when it is not a user's (a bot's, the bot's own, no
    channel, or neither text nor file)."""
    author = wire_object(message.get("author"))
    channel = message.get("channel_id")
    if not isinstance(channel, str) or not isinstance(author.get("id"), str) or author.get("bot") or author["id"] == bot.user_id:
        return None
    text, files = wire_text(message.get("content")), _files(message)
    if not text.strip() and not files:
        return None
    private = message.get("guild_id") is None
    mentions = message.get("mentions")
    mentioned = any(wire_object(m).get("id") == bot.user_id for m in (mentions if isinstance(mentions, list) else ()))
    replied = wire_object(wire_object(message.get("referenced_message")).get("author")).get("id") == bot.user_id
    text = re.sub(rf"<@!?{re.escape(bot.user_id)}>", "", text).strip()
    name = str(author.get("global_name") or author.get("username") or author["id"])
    return Incoming(ChatRef(PLATFORM, channel), author["id"], name, text, private, private or mentioned or replied, files)


def read_interaction(interaction: dict[str, Any]) -> ButtonPress | None:
    """A pressed button as the gateway reads it; None for any other interaction."""
    if interaction.get("type") != COMPONENT_INTERACTION:
        return None
    user = wire_object(wire_object(interaction.get("member")).get("user")) or wire_object(interaction.get("user"))
    channel, data = interaction.get("channel_id"), wire_object(interaction.get("data")).get("custom_id")
    if not isinstance(channel, str) or not isinstance(user.get("id"), str) or not isinstance(data, str):
        return None
    return ButtonPress(ChatRef(PLATFORM, channel), user["id"], data)
