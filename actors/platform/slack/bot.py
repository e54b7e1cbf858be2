"""``platform/slack``: the Slack app, one session per DM and per channel thread, through the gateway's desk.

Messages: none of its own (it is driven by Socket Mode's envelopes). State: the Web API client with its
rate-limit book, the Socket Mode connection (made again at once when Slack asks or the socket drops,
with back-off while it cannot be opened), the desk and counters. Loop: check the bot token
(``auth.test``), open Socket Mode (``apps.connections.open`` with the app token) and read it; each user
message (``message``, ``app_mention``) and slash command goes to the desk, each pressed button
(``block_actions``) too, answered with a message only the presser sees.

The bot is the gateway's :class:`~actors.platform.gateway.port.ChatPort` for Slack: Markdown becomes
``mrkdwn`` split at 40,000 characters; an answer stays in the thread it was asked in; choices become
Block Kit buttons, which only the one who started the conversation may press; files go up through
``files.getUploadURLExternal`` / ``files.completeUploadExternal``; edits are paced to ``chat.update``'s
rate tier; a message being worked on gets 👀, then ✅ with its answer (``reactions``). Slack shows bots
no typing indicator outside its assistant threads, so :meth:`SlackBot.typing` sends nothing. While
connected it is the registry's ``slack`` platform (``slack:C0123ABCD``, ``slack:#general``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import trio

from actors import ActorHandle
from actors.platform.gateway.adapter import PlatformAdapter
from actors.platform.gateway.desk import session_id_for
from actors.platform.gateway.recent import Recent
from actors.platform.gateway.port import (
    ButtonPress,
    ChatRef,
    Choice,
    Incoming,
    RemoteFile,
    SentMessage,
)
from markup import SLACK_LIMIT, slack_chunks, split_markdown
from markup.slack import slack_escape
from actors.platform.gateway.transport import platform_client
from actors.platform.outbound import (
    DeliveryFailed,
    Destination,
    OutboundRegistry,
    UnknownDestination,
)
from actors.platform.slack.events import read_action, read_command, read_message
from actors.platform.gateway.pacing import EditPacer
from actors.platform.slack.socket_mode import SocketLost, SocketMode
from actors.platform.slack.web import SlackError, SlackWeb
from actors.session import SessionService
from config.slack import SlackConfig
from messages.supervision import ActorState
from messages.wire_shapes import wire_object

__all__ = ["SLACK_SOURCE", "SLACK_TOOLSETS", "SlackBot", "SlackTokens", "slack_session_id"]

SLACK_SOURCE = "slack"
SLACK_TOOLSETS = ("hermes-slack",)
SESSION_PREFIX = "sl"
log = logging.getLogger("hermes_actors.slack")
#: Buttons in one actions block (Slack's limit), a button's text, a section's text.
MAX_BUTTONS, BUTTON_TEXT, SECTION_TEXT = 25, 75, 3000
WORKING, DONE = "eyes", "white_check_mark"
#: What the model reads after a message cut at Slack's limit (Slack itself sends none longer).
OVERSIZED_NOTE = f"\n\n[The message was longer than Slack's {SLACK_LIMIT:,} characters and was cut here.]"


def slack_session_id(channel: str, thread_ts: str | None = None) -> str:
    """The first session of a Slack DM or channel thread: stable across restarts."""
    return session_id_for(SESSION_PREFIX, ":".join(part for part in (channel, thread_ts) if part))


@attrs.frozen
class SlackTokens:
    """The app's two tokens (secrets: never shown)."""

    bot: str = attrs.field(repr=False)
    app: str = attrs.field(repr=False)


class SlackBot(PlatformAdapter):
    """The app; see the module's docstring.

    Args:
        config: ``platforms.slack``.
        tokens: the bot and app-level tokens (secrets: never logged).
        sessions: the daemon's session service.
        outbound: where the bot registers while connected.
        state_dir: where the conversations' current sessions are kept.
        pairing: the ``pairing`` actor's handle (None: only ``allow_from``).
    """

    kind = "slack"
    platform = SLACK_SOURCE

    def __init__(
        self,
        config: SlackConfig,
        tokens: SlackTokens,
        sessions: SessionService,
        outbound: OutboundRegistry,
        state_dir: Path,
        pairing: Callable[[], ActorHandle[Any] | None] = lambda: None,
    ) -> None:
        super().__init__(config, sessions, outbound, state_dir, pairing, prefix=SESSION_PREFIX, toolsets=SLACK_TOOLSETS)
        self.config = config
        self._tokens = tokens
        self.web: SlackWeb | None = None
        self.socket = SocketMode(self._dispatch, self.up)
        self.pacer = EditPacer(self.desk.spawn)
        self.bot_user_id = ""
        self.skipped = 0
        self._threads = Recent()  # (channel, thread_ts) the bot takes part in: no mention needed there
        self._seen = Recent()  # (channel, ts): a message comes as message and app_mention both
        self._working = Recent()  # ChatRef -> the timestamps of its messages marked 👀
        self._channels: dict[str, str] = {}  # #name -> id

    def snapshot_details(self) -> dict[str, Any]:
        web = self.web
        return {
            **self.connection_details(), "socket_connections": self.socket.connections,
            "disconnects": self.socket.disconnects, "envelopes": self.socket.envelopes,
            "duplicates": self.socket.duplicates, "malformed": self.socket.malformed + self.skipped,
            "edits_coalesced": self.pacer.coalesced,
            "rate_limited": web.rate_limited if web is not None else 0,
            "rate_limited_seconds": round(web.waited, 3) if web is not None else 0.0,
        }

    async def main(self) -> None:
        self.state = ActorState.RUNNING
        await self.desk.load()
        async with platform_client() as client:
            self.web = SlackWeb(self.config.api_url, self._tokens.bot, self._tokens.app, client)
            await self.keep_connected(self._connect)

    async def _connect(self) -> None:
        web = self._web()
        if not self.bot_user_id:
            self.bot_user_id = str((await web.call("auth.test")).get("user_id") or "")
        url = (await web.call("apps.connections.open", token="app")).get("url")
        if not isinstance(url, str) or not url.startswith(("wss://", "ws://")):
            raise SlackError("apps.connections.open", "no WebSocket address in the answer")
        try:
            await self.socket.serve(url)
        except SocketLost as exc:
            raise SlackError("socket mode", str(exc)) from None
        finally:
            if self.connection == "connected":
                self.connection = "reconnecting"

    # -- what Slack sends -----------------------------------------------------------------------

    async def _dispatch(self, kind: str, payload: dict[str, Any]) -> None:
        if kind == "events_api":
            event = wire_object(payload.get("event"))
            if event.get("type") in ("message", "app_mention"):
                await self._message(event)
            elif event.get("type") in ("tokens_revoked", "app_uninstalled"):
                log.error("slack: the app's tokens were revoked (%s); the bot stops answering", event["type"])
                self.bot_user_id = ""  # the next connection checks the token again, and stays off if refused
                self.down(f"slack: {event['type']}")
            elif not event:
                self._skip("an events_api envelope without an event")
        elif kind == "interactive":
            press = read_action(payload)
            if press is None:
                self._skip(f"an interactive payload of type {str(payload.get('type'))[:40]!r}")
            else:
                self.desk.spawn(self._press, press)
        elif kind == "slash_commands":
            incoming = read_command(payload)
            if incoming is None:
                self._skip("a slash command without a user, channel or text")
            else:
                await self._take(incoming, None)

    async def _message(self, event: dict[str, Any]) -> None:
        incoming = read_message(event, self.bot_user_id)
        if incoming is None:
            if event.get("subtype") is None and not event.get("bot_id") and event.get("user") != self.bot_user_id:
                self._skip("a message event without a user, channel, timestamp or words")
            return
        if len(incoming.text) > SLACK_LIMIT:
            log.warning("slack chat %s: a message of %d characters, over Slack's %d; cut", incoming.chat.chat_id, len(incoming.text), SLACK_LIMIT)
            incoming = attrs.evolve(incoming, text=incoming.text[:SLACK_LIMIT] + OVERSIZED_NOTE)
        ts = str(event["ts"])
        if (incoming.chat.chat_id, ts) in self._seen:
            return
        self._seen.remember((incoming.chat.chat_id, ts))
        if not incoming.private and (incoming.chat.chat_id, incoming.chat.thread_id) in self._threads:
            incoming = attrs.evolve(incoming, addressed=True)  # a thread the bot is in: no mention needed
        await self._take(incoming, ts)

    async def _take(self, incoming: Incoming, ts: str | None) -> None:
        before = (self.desk.refused, self.desk.ignored, self.desk.commands)
        await self.desk.take(incoming)
        refused, ignored, commands = self.desk.refused, self.desk.ignored, self.desk.commands
        if (refused, ignored) != before[:2]:
            return
        chat = incoming.chat
        if not incoming.private:
            self._threads.remember((chat.chat_id, chat.thread_id))
        if ts is not None and commands == before[2] and self.config.reactions:
            self._working.remember(chat, [*self._working.get(chat, []), ts])
            self.desk.spawn(self._react, chat.chat_id, ts, WORKING, "add")

    def _skip(self, what: str) -> None:
        self.skipped += 1
        log.warning("slack: skipped %s (not as Slack documents it)", what)

    async def _press(self, press: ButtonPress) -> None:
        notice = slack_escape(await self.desk.press(press))
        args = {"channel": press.chat.chat_id, "user": press.user_id, "text": notice}
        if press.chat.thread_id:
            args["thread_ts"] = press.chat.thread_id
        try:
            await self._web().call("chat.postEphemeral", args)
        except DeliveryFailed as exc:
            log.info("slack: a button's answer was not shown: %s", exc)

    async def _react(self, channel: str, ts: str, name: str, action: str) -> None:
        try:
            await self._web().call(f"reactions.{action}", {"channel": channel, "timestamp": ts, "name": name})
        except DeliveryFailed as exc:
            log.debug("slack: reactions.%s %s was refused: %s", action, name, exc)

    def _answered(self, chat: ChatRef) -> None:
        for ts in self._working.pop(chat, None) or ():
            self.desk.spawn(self._react, chat.chat_id, ts, WORKING, "remove")
            self.desk.spawn(self._react, chat.chat_id, ts, DONE, "add")

    def _web(self) -> SlackWeb:
        if self.web is None:
            raise SlackError("send", "the bot is not connected yet")
        return self.web

    # -- the gateway's port ---------------------------------------------------------------------

    async def send_text(self, chat: ChatRef, text: str, *, markdown: bool) -> SentMessage:
        """See :meth:`ChatPort.send_text`: ``mrkdwn`` when ``markdown``, else plain (escaped) text."""
        pieces = slack_chunks(text) if markdown else split_markdown(slack_escape(text), SLACK_LIMIT)
        sent = None
        for piece in pieces or ["(no answer)"]:
            sent = await self._post(chat, {"text": piece, "mrkdwn": markdown, "unfurl_links": False})
        assert sent is not None
        if markdown:
            self._answered(chat)
        return sent

    async def send_choices(self, chat: ChatRef, text: str, choices: list[Choice]) -> SentMessage:
        """See :meth:`ChatPort.send_choices`: a Block Kit section and a row of buttons."""
        buttons = []
        for index, choice in enumerate(choices[:MAX_BUTTONS]):
            button = {"type": "button", "action_id": f"choice_{index}", "value": choice.data,
                      "text": {"type": "plain_text", "text": choice.label[:BUTTON_TEXT]}}
            if choice.label == "Deny":
                button["style"] = "danger"
            elif index == 0:
                button["style"] = "primary"
            buttons.append(button)
        shown = slack_escape(text)
        blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": shown[:SECTION_TEXT]}}, {"type": "actions", "elements": buttons}]
        return await self._post(chat, {"text": shown[:SLACK_LIMIT], "blocks": blocks})

    async def edit_text(self, message: SentMessage, text: str) -> None:
        """See :meth:`ChatPort.edit_text`: paced to ``chat.update``'s rate tier (see ``pacing``)."""
        args = {"channel": message.chat.chat_id, "ts": message.message_id, "text": slack_escape(text)[:SLACK_LIMIT], "blocks": []}

        async def update() -> None:
            try:
                await self._web().call("chat.update", args)
            except DeliveryFailed as exc:
                log.warning("slack chat %s: an edit was not made: %s", message.chat.chat_id, exc)

        await self.pacer.edit(f"{message.chat.chat_id}:{message.message_id}", update)

    async def send_file(self, chat: ChatRef, path: Path) -> None:
        """See :meth:`ChatPort.send_file`: reserve an upload, send the bytes, share it in the chat."""
        web = self._web()
        size = (await trio.to_thread.run_sync(path.stat)).st_size
        reserved = await web.call("files.getUploadURLExternal", {"filename": path.name, "length": str(size)})
        upload_url, file_id = reserved.get("upload_url"), reserved.get("file_id")
        if not isinstance(upload_url, str) or not isinstance(file_id, str):
            raise SlackError("files.getUploadURLExternal", "no upload address in the answer")
        await web.upload(upload_url, path)
        args: dict[str, Any] = {"files": [{"id": file_id, "title": path.name}], "channel_id": chat.chat_id}
        if chat.thread_id:
            args["thread_ts"] = chat.thread_id
        await web.call("files.completeUploadExternal", args)
        self.sent += 1

    async def typing(self, chat: ChatRef) -> None:
        """See :meth:`ChatPort.typing`: nothing (Slack shows bots no typing indicator; 👀 says it)."""

    async def download(self, file: RemoteFile, destination: Path, limit: int) -> int:
        """See :meth:`ChatPort.download` (a Slack file's id here is its ``url_private_download``)."""
        return await self._web().download(file.file_id, destination, limit)

    async def _post(self, chat: ChatRef, args: dict[str, Any]) -> SentMessage:
        body = {"channel": chat.chat_id, **args}
        if chat.thread_id:
            body["thread_ts"] = chat.thread_id
        result = await self._web().call("chat.postMessage", body)
        self.sent += 1
        return SentMessage(chat, str(result.get("ts", "")))

    # -- deliveries -----------------------------------------------------------------------------

    async def destination_chat(self, destination: Destination) -> ChatRef:
        """See :meth:`PlatformAdapter.destination_chat`: a channel id, or ``#name`` looked up once
        (``conversations.list``: the bot needs ``channels:read``, and ``groups:read`` for private ones)."""
        target = destination.chat or self.config.home_channel
        if not target:
            raise UnknownDestination("slack has no home_channel configured; name a channel (slack:C0123ABCD or slack:#general)")
        channel = await self._channel_id(target) if target.startswith("#") else target
        return ChatRef(self.platform, channel, destination.thread)

    async def _channel_id(self, name: str) -> str:
        wanted = name.removeprefix("#").lower()
        if wanted not in self._channels:
            cursor = ""
            while True:
                args = {"types": "public_channel,private_channel", "exclude_archived": "true", "limit": "1000", "cursor": cursor}
                page = await self._web().call("conversations.list", args)
                listed = page.get("channels")
                for channel in listed if isinstance(listed, list) else ():
                    item = wire_object(channel)
                    if isinstance(item.get("name"), str) and isinstance(item.get("id"), str):
                        self._channels[item["name"].lower()] = item["id"]
                cursor = str(wire_object(page.get("response_metadata")).get("next_cursor") or "")
                if not cursor or wanted in self._channels:
                    break
        if wanted not in self._channels:
            raise UnknownDestination(f"slack has no channel named #{wanted} that the bot can see")
        return self._channels[wanted]
