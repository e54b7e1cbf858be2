"""Slack's payloads read into the gateway's terms: a ``message`` or ``app_mention`` event as
:class:`Incoming`, a pressed button (``block_actions``) as :class:`ButtonPress`, a slash command as the
message it stands for. Pure functions of the payload's JSON; anything not as Slack documents it is None.

Where an answer goes: a direct message is answered in the DM (in the thread, when the user wrote in
one); a channel message is answered in a thread under it (or in the thread it came in), so that a
conversation in a busy channel stays together, and each thread is a session of its own.
"""

from __future__ import annotations

import html
import re
from typing import Any

from actors.platform.gateway.port import ButtonPress, ChatRef, Incoming, RemoteFile, file_kind
from messages.wire_shapes import wire_int, wire_object, wire_text

__all__ = ["PLATFORM", "read_action", "read_command", "read_message"]

PLATFORM = "slack"
#: Message subtypes that are a user's words (others are edits, joins, bots ...).
_USER_SUBTYPES = frozenset({None, "file_share", "thread_broadcast"})
_LINK = re.compile(r"<(?P<url>(?:https?|mailto):[^|>]+)(?:\|(?P<label>[^>]+))?>")
#: The desk's commands that a slash command's first word may name (``/hermes status``).
_DESK_COMMANDS = frozenset({"stop", "new", "reset", "usage", "status", "approve", "deny", "help", "start"})


def _kind(file: dict[str, Any]) -> str:
    """A Slack audio clip (recorded in the app) is a voice note; otherwise the MIME type says."""
    return "voice" if file.get("subtype") == "slack_audio" else file_kind(str(file.get("mimetype") or ""))


def _files(event: dict[str, Any]) -> tuple[RemoteFile, ...]:
    files = []
    listed = event.get("files")
    for item in listed if isinstance(listed, list) else ():
        url = wire_object(item).get("url_private_download") or wire_object(item).get("url_private")
        if isinstance(url, str):
            kind = _kind(item)
            files.append(RemoteFile(kind, url, str(item.get("name") or kind), wire_int(item.get("size"))))
    return tuple(files)


def plain_text(text: str, bot_user_id: str) -> str:
    """Slack's message text as the model reads it: the bot's mention removed, links as their address
    (with the label when it differs), Slack's escapes undone."""
    text = text.replace(f"<@{bot_user_id}>", "") if bot_user_id else text

    def link(match: re.Match[str]) -> str:
        url, label = match["url"], match["label"]
        return url if not label or label == url.removeprefix("mailto:") else f"{label} ({url})"

    return html.unescape(_LINK.sub(link, text)).strip()


def read_message(event: dict[str, Any], bot_user_id: str) -> Incoming | None:
    """A ``message`` or ``app_mention`` event as the gateway reads it; None when it is not a user's
    words (a bot's, the bot's own, an edit, or neither text nor file) or not as documented."""
    kind, user, channel, ts = event.get("type"), event.get("user"), event.get("channel"), event.get("ts")
    if kind not in ("message", "app_mention") or event.get("subtype") not in _USER_SUBTYPES or event.get("bot_id"):
        return None
    if not isinstance(user, str) or not user or user == bot_user_id or not isinstance(channel, str) or not channel:
        return None
    if not isinstance(ts, str):
        return None
    raw, files = wire_text(event.get("text")), _files(event)
    if not raw.strip() and not files:
        return None
    private = event.get("channel_type") == "im"
    thread = event.get("thread_ts") if isinstance(event.get("thread_ts"), str) else None
    mentioned = kind == "app_mention" or (bool(bot_user_id) and f"<@{bot_user_id}>" in raw)
    chat = ChatRef(PLATFORM, channel, thread if private else (thread or ts))
    return Incoming(chat, user, user, plain_text(raw, bot_user_id), private, private or mentioned, files)


def read_action(payload: dict[str, Any]) -> ButtonPress | None:
    """A ``block_actions`` payload's first button as the gateway reads it; None for anything else."""
    if payload.get("type") != "block_actions":
        return None
    user = wire_object(payload.get("user")).get("id")
    channel = wire_object(payload.get("channel")).get("id") or wire_object(payload.get("container")).get("channel_id")
    actions = payload.get("actions")
    first = wire_object(actions[0]) if isinstance(actions, list) and actions else {}
    value = first.get("value")
    if not isinstance(user, str) or not isinstance(channel, str) or not isinstance(value, str):
        return None
    thread = wire_object(payload.get("message")).get("thread_ts") or wire_object(payload.get("container")).get("thread_ts")
    return ButtonPress(ChatRef(PLATFORM, channel, thread if isinstance(thread, str) else None), user, value)


def read_command(payload: dict[str, Any]) -> Incoming | None:
    """A slash command as the message it stands for: ``/stop`` (and the desk's other commands) as
    themselves; the app's own command (``/hermes``) as its text, a leading desk command word made one
    (``/hermes status`` is ``/status``). None when it is not as documented."""
    command, user, channel = payload.get("command"), payload.get("user_id"), payload.get("channel_id")
    if not isinstance(command, str) or not isinstance(user, str) or not isinstance(channel, str) or not user or not channel:
        return None
    text = wire_text(payload.get("text")).strip()
    name = command.lstrip("/").lower()
    if name in _DESK_COMMANDS:
        text = f"/{name} {text}".strip()
    elif text.split(" ", 1)[0].lower() in _DESK_COMMANDS:
        text = f"/{text}"
    if not text:
        return None
    private = channel.startswith("D")
    display = wire_text(payload.get("user_name")) or user
    return Incoming(ChatRef(PLATFORM, channel), user, display, plain_text(text, ""), private, True)
