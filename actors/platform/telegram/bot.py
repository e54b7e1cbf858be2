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
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx2
import trio

from actors import Actor, ActorHandle
from actors.platform.gateway.desk import GatewayDesk, session_id_for
from actors.platform.gateway.port import ChatRef, Choice, RemoteFile, SentMessage
from actors.platform.markup import TELEGRAM_LIMIT, extract_media, split_markdown, telegram_chunks, utf16_length
from actors.platform.state_files import read_json, write_json
from actors.platform.outbound import Destination, OutboundRegistry, UnknownDestination
from actors.platform.telegram.bot_api import BotApi, TelegramError, TelegramUnauthorized
from actors.platform.telegram.updates import BotIdentity, read_button, read_message
from actors.session import SessionService
from config.telegram import TelegramConfig
from messages.supervision import ActorState

__all__ = ["TELEGRAM_SOURCE", "TELEGRAM_TOOLSETS", "TelegramBot", "telegram_session_id"]

log = logging.getLogger("hermes_actors.telegram")

TELEGRAM_SOURCE = "telegram"
TELEGRAM_TOOLSETS = ("hermes-telegram",)
SESSION_PREFIX = "tg"
BACKOFF_FIRST, BACKOFF_MAX = 1.0, 60.0
#: Telegram sends a photo of at most this size as a photo; a larger image goes as a document.
PHOTO_LIMIT = 10 * 1024 * 1024
PHOTO_SUFFIXES = frozenset({".jpg", ".jpeg", ".png", ".gif", ".webp"})


def telegram_session_id(chat_id: int) -> str:
    """The first session of a Telegram chat: stable across restarts, in an id space only this bot uses."""
    return session_id_for(SESSION_PREFIX, str(chat_id))


class TelegramBot(Actor[Any]):
    """The bot; see the module's docstring.

    Args:
        config: ``platforms.telegram``.
        token: the bot token (a secret: never logged).
        sessions: the daemon's session service.
        outbound: where the bot registers while connected.
        state_dir: where the update offset and the chats' current sessions are kept.
        pairing: the ``pairing`` actor's handle (None: no pairing, only ``allowed_users``).
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
        pairing: Callable[[], ActorHandle[Any] | None] = lambda: None,
    ) -> None:
        super().__init__()
        self.config = config
        self._token = token
        self.outbound = outbound
        self.offset_file = state_dir / "telegram-offset.json"
        self.offset = 0
        self.connection = "connecting"
        self.connection_error: str | None = None
        self.sent = 0
        self.api: BotApi | None = None
        self.identity = BotIdentity(0, "")
        self.desk = GatewayDesk(
            self, config, sessions, pairing, state_dir / "telegram-chats.json", self.start_soon,
            prefix=SESSION_PREFIX, toolsets=TELEGRAM_TOOLSETS,
        )

    def snapshot_details(self) -> dict[str, Any]:
        return {
            "connection": self.connection, "connection_error": self.connection_error, "offset": self.offset,
            "sent": self.sent, **self.desk.counts(),
        }

    async def main(self) -> None:
        self.state = ActorState.RUNNING
        self.offset = await trio.to_thread.run_sync(_read_offset, self.offset_file)
        await self.desk.load()
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
        api = self._api()
        me = await api.call("getMe")
        self.identity = BotIdentity(int(me.get("id", 0)), str(me.get("username") or ""))
        self.connection, self.connection_error = "connected", None
        self.outbound.register(self)  # type: ignore[arg-type]
        try:
            while True:
                updates = await api.call(
                    "getUpdates", http_timeout=self.config.poll_timeout + 10, offset=self.offset or None,
                    timeout=int(self.config.poll_timeout), allowed_updates=["message", "callback_query"],
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
        await trio.to_thread.run_sync(write_json, self.offset_file, self.offset)
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

    # -- the registry's side --------------------------------------------------------------------

    async def deliver(self, destination: Destination, text: str, attachments: Sequence[str] = ()) -> None:
        """Send ``text`` to the destination's chat, or to ``home_channel``; see ``Outbound.deliver``."""
        if destination.chat is None and self.config.home_channel is None:
            raise UnknownDestination("telegram has no home_channel configured; name a chat (telegram:CHAT_ID)")
        try:
            chat_id = int(destination.chat) if destination.chat is not None else self.config.home_channel
        except ValueError as exc:
            raise UnknownDestination(f"a Telegram chat is a number, got {destination.chat!r}") from exc
        chat = ChatRef(TELEGRAM_SOURCE, str(chat_id), destination.thread)
        body, _media = extract_media(text)
        await self.send_text(chat, body or "(no answer)", markdown=True)
        for attachment in attachments:
            await self.send_file(chat, Path(attachment))


def _thread(chat: ChatRef) -> int | None:
    return int(chat.thread_id) if chat.thread_id and chat.thread_id.lstrip("-").isdigit() else None


def _read_offset(path: Path) -> int:
    value = read_json(path)
    return value if isinstance(value, int) and value >= 0 else 0
