"""``platform/telegram``: the Telegram bot, one session per chat, through the gateway's desk.

Messages: none of its own (it is driven by Telegram's updates). State: the Bot API, the update offset
(persisted, so no update is handled twice across restarts: it is saved before the update is acted on),
the desk (who may talk, sessions per chat, commands, followers) and counters. Loop: long-poll
``getUpdates``; a message goes to the desk, a button press (``callback_query``) too, answered with
``answerCallbackQuery``. When Telegram cannot be reached the loop backs off (1 s doubling to 60 s) and
its state says so; the daemon never waits for it.

The bot is the gateway's :class:`~actors.platform.gateway.port.ChatPort` for Telegram: Markdown becomes
Telegram's HTML, split at its limit; choices become an inline keyboard; files go as photos or
documents; user files are fetched with ``getFile``. While connected, it is also the registry's
``telegram`` platform: cron results and other messages the daemon sends on its own reach a named chat,
or ``home_channel``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio

from actors import ActorHandle
from actors.platform.gateway.adapter import PlatformAdapter
from actors.platform.gateway.desk import session_id_for
from actors.platform.gateway.pairing import PairingMessage
from actors.platform.gateway.port import ChatRef, Choice, RemoteFile, SentMessage
from markup import (
    TELEGRAM_LIMIT,
    split_markdown,
    telegram_chunks,
    utf16_length,
)
from actors.platform.gateway.transport import platform_client
from actors.platform.outbound import OutboundRegistry
from actors.platform.state_files import read_json, write_json
from actors.platform.telegram.bot_api import BotApi, TelegramError
from actors.platform.telegram.updates import BotIdentity, read_button, read_message
from actors.session import SessionService
from config.telegram import TelegramConfig
from messages.supervision import ActorState

__all__ = ["TELEGRAM_SOURCE", "TELEGRAM_TOOLSETS", "TelegramBot", "telegram_session_id"]

log = logging.getLogger("hermes_actors.telegram")

TELEGRAM_SOURCE = "telegram"
TELEGRAM_TOOLSETS = ("hermes-telegram",)
SESSION_PREFIX = "tg"
#: Telegram sends a photo of at most this size as a photo; a larger image goes as a document.
PHOTO_LIMIT = 10 * 1024 * 1024
PHOTO_SUFFIXES = frozenset({".jpg", ".jpeg", ".png", ".gif", ".webp"})


def telegram_session_id(chat_id: int) -> str:
    """The first session of a Telegram chat: stable across restarts, in an id space only this bot uses."""
    return session_id_for(SESSION_PREFIX, str(chat_id))


class TelegramBot(PlatformAdapter):
    """The bot; see the module's docstring.

    Args:
        config: ``platforms.telegram``.
        token: the bot token (a secret: never logged).
        sessions: the daemon's session service.
        outbound: where the bot registers while connected.
        state_dir: where the update offset and the chats' current sessions are kept.
        pairing: the ``pairing`` actor's handle (None: no pairing, only ``allow_from``).
    """

    kind = "telegram"
    platform = TELEGRAM_SOURCE

    def __init__(
        self,
        config: TelegramConfig,
        token: str,
        sessions: SessionService,
        outbound: OutboundRegistry,
        state_dir: Path,
        pairing: Callable[[], ActorHandle[PairingMessage] | None] = lambda: None,
    ) -> None:
        super().__init__(config, sessions, outbound, state_dir, pairing, prefix=SESSION_PREFIX, toolsets=TELEGRAM_TOOLSETS)
        self.config = config
        self._token = token
        self.offset_file = state_dir / "telegram-offset.json"
        self.offset = 0
        self.api: BotApi | None = None
        self.identity = BotIdentity(0, "")

    def snapshot_details(self) -> dict[str, Any]:
        return {**self.connection_details(), "offset": self.offset}

    async def main(self) -> None:
        self.state = ActorState.RUNNING
        self.offset = await trio.to_thread.run_sync(_read_offset, self.offset_file)
        await self.desk.load()
        async with platform_client() as client:
            self.api = BotApi(self.config.base_url, self._token, client)
            await self.keep_connected(self._poll_forever)

    async def _poll_forever(self) -> None:
        api = self._api()
        me = await api.call("getMe")
        self.identity = BotIdentity(int(me.get("id", 0)), str(me.get("username") or ""))
        self.up()
        while True:
            updates = await api.call(
                "getUpdates", http_timeout=self.config.poll_timeout + 10, offset=self.offset or None,
                timeout=int(self.config.poll_timeout), allowed_updates=["message", "callback_query"],
            )
            ids = [u["update_id"] for u in updates or () if isinstance(u, dict) and isinstance(u.get("update_id"), int)]
            if not ids:
                continue
            # Saved before any of them is acted on: an update is handled at most once, even across a crash.
            self.offset = max(ids) + 1
            await trio.to_thread.run_sync(write_json, self.offset_file, self.offset)
            for update in updates:
                if isinstance(update, dict) and isinstance(update.get("update_id"), int):
                    await self._take(update)
                else:
                    log.warning("telegram: an update without an id was skipped")

    async def _take(self, update: dict[str, Any]) -> None:
        update_id = update["update_id"]
        if isinstance(update.get("callback_query"), dict):
            self.start_soon(self._press, update["callback_query"])
            return
        message = update.get("message")
        incoming = read_message(message, self.identity) if isinstance(message, dict) else None
        if incoming is None:
            log.info("telegram: update %d has nothing for the agent; skipped", update_id)
            return
        await self.desk.take(incoming)

    async def _press(self, query: dict[str, Any]) -> None:
        press = read_button(query)
        notice = await self.desk.press(press) if press is not None else "This button is not mine."
        try:
            await self._api().call("answerCallbackQuery", callback_query_id=query.get("id"), text=notice)
        except TelegramError as exc:
            log.info("telegram: a button's answer was not shown: %s", exc)

    def _api(self) -> BotApi:
        if self.api is None:
            raise TelegramError("send", "the bot is not connected yet")
        return self.api

    # -- the gateway's port ---------------------------------------------------------------------

    async def send_text(self, chat: ChatRef, text: str, *, markdown: bool) -> SentMessage:
        """See :meth:`ChatPort.send_text`."""
        pieces = telegram_chunks(text) if markdown else split_markdown(text, TELEGRAM_LIMIT, utf16_length)
        sent = None
        for piece in pieces or ["(no answer)"]:
            sent = await self._send_piece(chat, piece, parse_mode="HTML" if markdown else None)
        assert sent is not None
        return sent

    async def send_choices(self, chat: ChatRef, text: str, choices: list[Choice]) -> SentMessage:
        """See :meth:`ChatPort.send_choices`: an inline keyboard, a button per row."""
        keyboard = {"inline_keyboard": [[{"text": choice.label, "callback_data": choice.data}] for choice in choices]}
        return await self._send_piece(chat, text[: TELEGRAM_LIMIT - 1], reply_markup=keyboard)

    async def edit_text(self, message: SentMessage, text: str) -> None:
        """See :meth:`ChatPort.edit_text`."""
        await self._api().call(
            "editMessageText", chat_id=int(message.chat.chat_id), message_id=int(message.message_id), text=text[: TELEGRAM_LIMIT - 1],
        )

    async def send_file(self, chat: ChatRef, path: Path) -> None:
        """See :meth:`ChatPort.send_file`: a photo when it is an image Telegram shows as one."""
        size = (await trio.to_thread.run_sync(path.stat)).st_size
        photo = path.suffix.lower() in PHOTO_SUFFIXES and size <= PHOTO_LIMIT
        method, field = ("sendPhoto", "photo") if photo else ("sendDocument", "document")
        await self._api().upload(method, field, path, chat_id=chat.chat_id, message_thread_id=chat.thread_id)
        self.sent += 1

    async def typing(self, chat: ChatRef) -> None:
        """See :meth:`ChatPort.typing`."""
        await self._api().call("sendChatAction", chat_id=int(chat.chat_id), action="typing", message_thread_id=_thread(chat))

    async def download(self, file: RemoteFile, destination: Path, limit: int) -> int:
        """See :meth:`ChatPort.download`."""
        return await self._api().download(file.file_id, destination, limit)

    async def _send_piece(self, chat: ChatRef, text: str, **extra: Any) -> SentMessage:
        result = await self._api().call(
            "sendMessage", chat_id=int(chat.chat_id), text=text, message_thread_id=_thread(chat), **extra,
        )
        self.sent += 1
        return SentMessage(chat, str((result or {}).get("message_id", "")))


def _thread(chat: ChatRef) -> int | None:
    return int(chat.thread_id) if chat.thread_id and chat.thread_id.lstrip("-").isdigit() else None


def _read_offset(path: Path) -> int:
    value = read_json(path)
    return value if isinstance(value, int) and value >= 0 else 0
