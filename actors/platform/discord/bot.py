"""``platform/discord``: the Discord bot, one session per channel (or DM), through the gateway's desk.

Messages: none of its own (it is driven by the Gateway's events). State: the REST client with its
rate-limit book, the Gateway session (resumed across dropped connections, so that no event is lost),
the desk and counters. Loop: keep the Gateway connected (backing off while it fails); each
``MESSAGE_CREATE`` goes to the desk, each pressed button (``INTERACTION_CREATE``) too, answered with
a message only the presser sees. A message taken for a turn shows 👀 until the channel is answered, then
✅ (``reactions``, on as in Hermes).

The bot is the gateway's :class:`~actors.platform.gateway.port.ChatPort` for Discord: Markdown is
adapted to Discord's dialect and split at 2,000 characters; choices become a row of buttons (message
components); files go as attachments; users' attachments are fetched from Discord's CDN. While
connected it is the registry's ``discord`` platform.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from urllib.parse import quote
from pathlib import Path
from typing import Any


from actors import ActorHandle
from actors.platform.discord.events import BotUser, read_interaction, read_message
from actors.platform.discord.gateway import DiscordGateway, GatewayLost, GatewayRefused
from actors.platform.discord.rest import DiscordError, DiscordRest
from actors.platform.gateway.adapter import PlatformAdapter, TokenRefused
from actors.platform.gateway.desk import session_id_for
from actors.platform.gateway.marks import WorkMarks
from actors.platform.gateway.pairing import PairingMessage
from actors.platform.gateway.port import (
    ButtonPress,
    ChatRef,
    Choice,
    RemoteFile,
    SentMessage,
)
from markup import DISCORD_LIMIT, discord_chunks, split_markdown
from actors.platform.gateway.transport import platform_client
from actors.platform.outbound import OutboundRegistry
from actors.session import SessionService
from config.discord import DiscordConfig
from messages.supervision import ActorState

__all__ = ["DISCORD_SOURCE", "DISCORD_TOOLSETS", "DiscordBot", "discord_session_id"]

DISCORD_SOURCE = "discord"
DISCORD_TOOLSETS = ("hermes-discord",)
SESSION_PREFIX = "dc"
log = logging.getLogger("hermes_actors.discord")
#: Buttons per row of a message (Discord's limit), and rows per message.
ROW_WIDTH, MAX_ROWS = 5, 5
#: Interaction callback: a message in the channel, shown only to the presser (flag 64, ephemeral).
REPLY_TO_PRESS, EPHEMERAL = 4, 64


def discord_session_id(channel_id: str) -> str:
    """The first session of a Discord channel or DM: stable across restarts."""
    return session_id_for(SESSION_PREFIX, channel_id)


class DiscordBot(PlatformAdapter):
    """The bot; see the module's docstring.

    Args:
        config: ``platforms.discord``.
        token: the bot token (a secret: never logged).
        sessions: the daemon's session service.
        outbound: where the bot registers while connected.
        state_dir: where the channels' current sessions are kept.
        pairing: the ``pairing`` actor's handle (None: only ``allow_from``).
    """

    kind = "discord"
    platform = DISCORD_SOURCE

    def __init__(
        self,
        config: DiscordConfig,
        token: str,
        sessions: SessionService,
        outbound: OutboundRegistry,
        state_dir: Path,
        pairing: Callable[[], ActorHandle[PairingMessage] | None] = lambda: None,
    ) -> None:
        super().__init__(config, sessions, outbound, state_dir, pairing, prefix=SESSION_PREFIX, toolsets=DISCORD_TOOLSETS)
        self.config = config
        self._token = token
        self.rest: DiscordRest | None = None
        self.gateway = DiscordGateway(token, self._dispatch)
        self.identity = BotUser("", "")
        self.marks = WorkMarks(self._react, self.desk.spawn)

    def snapshot_details(self) -> dict[str, Any]:
        return {
            **self.connection_details(), "gateway_connections": self.gateway.connections,
            "resumes": self.gateway.resumes, "sequence": self.gateway.seq,
            "rate_limited_seconds": round(self.rest.limits.waited, 3) if self.rest is not None else 0.0,
        }

    async def main(self) -> None:
        self.state = ActorState.RUNNING
        await self.desk.load()
        async with platform_client() as client:
            self.rest = DiscordRest(self.config.api_url, self._token, client)
            await self.keep_connected(self._connect)

    async def _connect(self) -> None:
        url = self.config.gateway_url or str((await self._rest().request("GET", "/gateway/bot"))["url"])
        try:
            await self.gateway.serve(url)
        except GatewayRefused as exc:
            raise TokenRefused(str(exc)) from None
        except GatewayLost as exc:
            raise DiscordError("gateway", str(exc)) from None
        finally:
            if self.connection == "connected":
                self.connection = "reconnecting"

    async def _dispatch(self, event: str, data: dict[str, Any]) -> None:
        if event == "READY":
            user = data.get("user") or {}
            self.identity = BotUser(str(user.get("id", "")), str(user.get("username", "")))
            self.up()
        elif event == "RESUMED":
            self.up()
        elif event == "MESSAGE_CREATE":
            incoming = read_message(data, self.identity)
            if incoming is not None and await self.desk.take(incoming) and self.config.reactions:
                self.marks.working(incoming.chat, str(data.get("id")))
        elif event == "INTERACTION_CREATE":
            press = read_interaction(data)
            if press is not None:
                self.start_soon(self._press, press, str(data.get("id")), str(data.get("token")))

    async def _press(self, press: ButtonPress, interaction_id: str, interaction_token: str) -> None:
        notice = await self.desk.press(press)
        try:
            await self._rest().request(
                "POST", f"/interactions/{interaction_id}/{interaction_token}/callback",
                body={"type": REPLY_TO_PRESS, "data": {"content": notice, "flags": EPHEMERAL}},
            )
        except DiscordError as exc:
            log.info("discord: a button's answer was not shown: %s", exc)

    def _rest(self) -> DiscordRest:
        if self.rest is None:
            raise DiscordError("send", "the bot is not connected yet")
        return self.rest

    # -- the gateway's port ---------------------------------------------------------------------

    async def send_text(self, chat: ChatRef, text: str, *, markdown: bool) -> SentMessage:
        """See :meth:`ChatPort.send_text`."""
        pieces = discord_chunks(text) if markdown else split_markdown(text, DISCORD_LIMIT)
        sent = None
        for piece in pieces or ["(no answer)"]:
            sent = await self._post(chat, {"content": piece, "allowed_mentions": {"parse": []}})
        assert sent is not None
        if markdown:
            self.marks.answered(chat)
        return sent

    async def send_choices(self, chat: ChatRef, text: str, choices: list[Choice]) -> SentMessage:
        """See :meth:`ChatPort.send_choices`: rows of buttons (message components)."""
        buttons = [
            {"type": 2, "style": 4 if choice.label == "Deny" else 1, "label": choice.label[:80], "custom_id": choice.data}
            for choice in choices[: ROW_WIDTH * MAX_ROWS]
        ]
        rows = [{"type": 1, "components": buttons[i : i + ROW_WIDTH]} for i in range(0, len(buttons), ROW_WIDTH)]
        return await self._post(chat, {"content": text[: DISCORD_LIMIT], "components": rows, "allowed_mentions": {"parse": []}})

    async def edit_text(self, message: SentMessage, text: str) -> None:
        """See :meth:`ChatPort.edit_text`."""
        await self._rest().request(
            "PATCH", f"/channels/{message.chat.chat_id}/messages/{message.message_id}",
            body={"content": text[:DISCORD_LIMIT], "components": []},
        )

    async def send_file(self, chat: ChatRef, path: Path) -> None:
        """See :meth:`ChatPort.send_file`."""
        body = {"attachments": [{"id": 0, "filename": path.name}]}
        await self._rest().request("POST", f"/channels/{chat.chat_id}/messages", body=body, files={"files[0]": path})
        self.sent += 1

    async def typing(self, chat: ChatRef) -> None:
        """See :meth:`ChatPort.typing`."""
        await self._rest().request("POST", f"/channels/{chat.chat_id}/typing")

    async def download(self, file: RemoteFile, destination: Path, limit: int) -> int:
        """See :meth:`ChatPort.download` (a Discord attachment's id is its CDN address)."""
        return await self._rest().download(file.file_id, destination, limit)

    async def _react(self, chat: ChatRef, message_id: str, emoji: str, add: bool) -> None:
        path = f"/channels/{chat.chat_id}/messages/{message_id}/reactions/{quote(emoji)}/@me"
        try:
            await self._rest().request("PUT" if add else "DELETE", path)
        except DiscordError as exc:
            log.debug("discord: a %s reaction was refused: %s", emoji, exc)

    async def _post(self, chat: ChatRef, body: dict[str, Any]) -> SentMessage:
        result = await self._rest().request("POST", f"/channels/{chat.chat_id}/messages", body=body)
        self.sent += 1
        return SentMessage(chat, str((result or {}).get("id", "")))

