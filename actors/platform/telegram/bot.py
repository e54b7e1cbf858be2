"""``platform/telegram``: the Telegram bot, one session per chat.

Messages: none of its own (it is driven by Telegram's updates). State: the bot API, the update offset
(persisted, so no update is handled twice across restarts: it is saved before the update is acted on),
and counters. Loop: long-poll ``getUpdates``; each message from an allowed user goes to its chat's
session (created on the first message, ``tg-`` and a digest of the chat id, source ``telegram``),
queued behind a running turn, and the turn's final answer is sent back, converted to Telegram's HTML
and split at its limit, with a typing indicator while the turn runs. Anyone else gets a polite
refusal, never the model. When Telegram cannot be reached the loop backs off (1 s doubling to 60 s)
and its state says so; the daemon never waits for it.

While connected, the bot is the registry's ``telegram`` platform: cron results and other messages the
daemon sends on its own reach a named chat, or ``home_channel``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx2
import trio

from actors import Actor
from actors.platform.api.turns import TurnLost, send_watched
from actors.platform.markup import extract_media, telegram_chunks
from actors.platform.outbound import Destination, OutboundRegistry, UnknownDestination
from actors.platform.telegram.bot_api import BotApi, TelegramError, TelegramUnauthorized
from actors.session import SessionNotFound, SessionOptions, SessionService
from config.telegram import TelegramConfig
from messages.supervision import ActorState

__all__ = ["TELEGRAM_SOURCE", "TELEGRAM_TOOLSETS", "TelegramBot", "telegram_session_id"]

log = logging.getLogger("hermes_actors.telegram")

TELEGRAM_SOURCE = "telegram"
TELEGRAM_TOOLSETS = ("hermes-telegram",)
REFUSAL = "Sorry, I am not set up to talk with you. Ask the owner of this bot to add your user id."
#: How often the typing indicator is refreshed (Telegram shows it for about five seconds).
TYPING_EVERY = 4.0
BACKOFF_FIRST, BACKOFF_MAX = 1.0, 60.0


def telegram_session_id(chat_id: int) -> str:
    """The session of a Telegram chat: stable across restarts, in an id space only this bot uses."""
    return "tg-" + hashlib.sha256(str(chat_id).encode()).hexdigest()[:24]


class TelegramBot(Actor[Any]):
    """The bot; see the module's docstring.

    Args:
        config: ``platforms.telegram``.
        token: the bot token (a secret: never logged).
        sessions: the daemon's session service.
        outbound: where the bot registers while connected.
        offset_file: where the next update's id is kept.
    """

    kind = "telegram"

    def __init__(
        self, config: TelegramConfig, token: str, sessions: SessionService, outbound: OutboundRegistry, offset_file: Path
    ) -> None:
        super().__init__()
        self.config = config
        self._token = token
        self.sessions = sessions
        self.outbound = outbound
        self.offset_file = offset_file
        self.offset = 0
        self.connection = "connecting"
        self.connection_error: str | None = None
        self.received = self.sent = self.refused = 0
        self.api: BotApi | None = None

    def snapshot_details(self) -> dict[str, Any]:
        return {
            "connection": self.connection, "connection_error": self.connection_error, "offset": self.offset,
            "received": self.received, "sent": self.sent, "refused": self.refused,
        }

    async def main(self) -> None:
        self.state = ActorState.RUNNING
        self.offset = await trio.to_thread.run_sync(_read_offset, self.offset_file)
        async with httpx2.AsyncClient() as client:
            self.api = BotApi(self.config.base_url, self._token, client)
            wait = BACKOFF_FIRST
            while True:
                try:
                    await self._poll_forever()
                except TelegramUnauthorized as exc:
                    self._down(str(exc))
                    log.error("%s; the bot stays off until the token is fixed", exc)
                    await trio.sleep_forever()
                except TelegramError as exc:
                    self._down(str(exc))
                    log.warning("%s; trying again in %.0f s", exc, wait)
                    await trio.sleep(wait)
                    wait = min(wait * 2, BACKOFF_MAX)

    def _down(self, error: str) -> None:
        self.connection, self.connection_error = "failed", error
        self.outbound.unregister(self)  # type: ignore[arg-type]

    async def _poll_forever(self) -> None:
        assert self.api is not None
        await self.api.call("getMe")
        self.connection, self.connection_error = "connected", None
        self.outbound.register(self)  # type: ignore[arg-type]
        try:
            while True:
                updates = await self.api.call(
                    "getUpdates", http_timeout=self.config.poll_timeout + 10, offset=self.offset or None,
                    timeout=int(self.config.poll_timeout), allowed_updates=["message"],
                )
                for update in updates or ():
                    await self._take(update)
        finally:
            self.outbound.unregister(self)  # type: ignore[arg-type]

    async def _take(self, update: dict[str, Any]) -> None:
        update_id = update.get("update_id")
        if not isinstance(update_id, int):
            log.warning("telegram: an update without an id was skipped")
            return
        # Saved before acting: an update is handled at most once, even across a crash.
        self.offset = update_id + 1
        await trio.to_thread.run_sync(_write_offset, self.offset_file, self.offset)
        message = update.get("message")
        if not isinstance(message, dict):
            return
        chat, sender, text = message.get("chat") or {}, message.get("from") or {}, message.get("text")
        if not isinstance(chat.get("id"), int) or not isinstance(text, str) or not text.strip():
            log.info("telegram: update %d has no text for the agent; skipped", update_id)
            return
        self.received += 1
        if self.config.allowed_users and sender.get("id") not in self.config.allowed_users:
            self.refused += 1
            log.warning("telegram: refused a message from user %s in chat %s (not in allowed_users)", sender.get("id"), chat["id"])
            self.start_soon(self._send, chat["id"], REFUSAL, False)
            return
        self.start_soon(self._converse, chat["id"], text)

    async def _converse(self, chat_id: int, text: str) -> None:
        try:
            session_id = await self._session_for(chat_id)
            watch = await send_watched(self.sessions, session_id, text, source=TELEGRAM_SOURCE, label=f"telegram/{chat_id}")
        except Exception as exc:  # busy, a provider key missing ...: the chat is told, the bot goes on
            log.warning("telegram: chat %s: the message was not taken: %s", chat_id, exc)
            await self._send(chat_id, f"Sorry, I could not take that message: {exc}", False)
            return
        try:
            async with trio.open_nursery() as typing:
                typing.start_soon(self._typing, chat_id)
                try:
                    while await watch.next_event() is not None:
                        pass
                finally:
                    typing.cancel_scope.cancel()
        except TurnLost as exc:
            await self._send(chat_id, f"The session stopped before answering: {exc}", False)
            return
        finally:
            watch.close()
        outcome = watch.outcome
        assert outcome is not None
        reply = outcome.final_text if outcome.reason == "completed" else (outcome.final_text or f"({outcome.reason})")
        await self._send(chat_id, reply, True)

    async def _session_for(self, chat_id: int) -> str:
        session_id = telegram_session_id(chat_id)
        try:
            await self.sessions.get(session_id)
        except SessionNotFound:
            options = SessionOptions(
                cwd=self.config.cwd or str(Path.home()), source=TELEGRAM_SOURCE, interactive=False,
                toolsets=TELEGRAM_TOOLSETS, sandbox=self.config.sandbox,
            )
            await self.sessions.create_session(options, session_id=session_id)
        return session_id

    async def _typing(self, chat_id: int) -> None:
        assert self.api is not None
        while True:
            try:
                await self.api.call("sendChatAction", chat_id=chat_id, action="typing")
            except TelegramError as exc:
                log.info("telegram: typing indicator: %s", exc)
            await trio.sleep(TYPING_EVERY)

    async def _send(self, chat_id: int, text: str, markdown: bool) -> None:
        """Send a reply (Markdown converted and split), logging a failure rather than raising it."""
        try:
            await self._send_text(chat_id, text, markdown)
        except TelegramError as exc:
            log.warning("telegram: a reply to chat %s was not sent: %s", chat_id, exc)

    async def _send_text(self, chat_id: int, text: str, markdown: bool) -> None:
        assert self.api is not None
        body, _media = extract_media(text)
        pieces = telegram_chunks(body or "(no answer)") if markdown else [text]
        for piece in pieces:
            await self.api.call("sendMessage", chat_id=chat_id, text=piece, parse_mode="HTML" if markdown else None)
            self.sent += 1

    # -- the registry's side --------------------------------------------------------------------

    async def deliver(self, destination: Destination, text: str, attachments: Sequence[str] = ()) -> None:
        """Send ``text`` to the destination's chat, or to ``home_channel``; see ``Outbound.deliver``."""
        if destination.chat is None and self.config.home_channel is None:
            raise UnknownDestination("telegram has no home_channel configured; name a chat (telegram:CHAT_ID)")
        try:
            chat_id = int(destination.chat) if destination.chat is not None else self.config.home_channel
        except ValueError as exc:
            raise UnknownDestination(f"a Telegram chat is a number, got {destination.chat!r}") from exc
        assert chat_id is not None
        await self._send_text(chat_id, text, True)


def _read_offset(path: Path) -> int:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return 0
    return value if isinstance(value, int) and value >= 0 else 0


def _write_offset(path: Path, offset: int) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(offset), encoding="utf-8")
    os.replace(temporary, path)
