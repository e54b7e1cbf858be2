"""Discord's Gateway events read into the gateway's terms: ``MESSAGE_CREATE`` as :class:`Incoming`,
a button's ``INTERACTION_CREATE`` as :class:`ButtonPress`. Pure functions of the event's JSON."""

from __future__ import annotations

import re
from typing import Any

import attrs

from actors.platform.gateway.port import ButtonPress, ChatRef, Incoming, RemoteFile

__all__ = ["COMPONENT_INTERACTION", "BotUser", "read_interaction", "read_message"]

PLATFORM = "discord"
#: ``INTERACTION_CREATE``'s type for a pressed button (a message component).
COMPONENT_INTERACTION = 3


@attrs.frozen
class BotUser:
    """Who the bot is (``READY``'s user): how it is mentioned and replied to."""

    user_id: str
    username: str


def _kind(content_type: str) -> str:
    for prefix, kind in (("image/", "image"), ("audio/", "audio"), ("video/", "video")):
        if content_type.startswith(prefix):
            return kind
    return "document"


def _files(message: dict[str, Any]) -> tuple[RemoteFile, ...]:
    files = []
    for item in message.get("attachments") or ():
        if isinstance(item, dict) and isinstance(item.get("url"), str):
            kind = _kind(str(item.get("content_type") or ""))
            files.append(RemoteFile(kind, item["url"], str(item.get("filename") or kind), item.get("size")))
    return tuple(files)


def read_message(message: dict[str, Any], bot: BotUser) -> Incoming | None:
    """The message as the gateway reads it; None when it is not a user's (a bot's, the bot's own, no
    channel, or neither text nor file)."""
    author = message.get("author") or {}
    channel = message.get("channel_id")
    if not isinstance(channel, str) or not isinstance(author.get("id"), str) or author.get("bot") or author["id"] == bot.user_id:
        return None
    text, files = str(message.get("content") or ""), _files(message)
    if not text.strip() and not files:
        return None
    private = message.get("guild_id") is None
    mentioned = any(isinstance(m, dict) and m.get("id") == bot.user_id for m in message.get("mentions") or ())
    replied = ((message.get("referenced_message") or {}).get("author") or {}).get("id") == bot.user_id
    text = re.sub(rf"<@!?{re.escape(bot.user_id)}>", "", text).strip()
    name = str(author.get("global_name") or author.get("username") or author["id"])
    return Incoming(ChatRef(PLATFORM, channel), author["id"], name, text, private, private or mentioned or replied, files)


def read_interaction(interaction: dict[str, Any]) -> ButtonPress | None:
    """A pressed button as the gateway reads it; None for any other interaction."""
    if interaction.get("type") != COMPONENT_INTERACTION:
        return None
    user = (interaction.get("member") or {}).get("user") or interaction.get("user") or {}
    channel, data = interaction.get("channel_id"), (interaction.get("data") or {}).get("custom_id")
    if not isinstance(channel, str) or not isinstance(user.get("id"), str) or not isinstance(data, str):
        return None
    return ButtonPress(ChatRef(PLATFORM, channel), user["id"], data)
