"""The Telegram bot front door (docs/DECISIONS.md#d-telegram): ``platform/telegram``, one session per chat."""

from actors.platform.telegram.bot import TELEGRAM_SOURCE, TelegramBot, telegram_session_id
from actors.platform.telegram.bot_api import BotApi, TelegramError, TelegramUnauthorized

__all__ = ["TELEGRAM_SOURCE", "BotApi", "TelegramBot", "TelegramError", "TelegramUnauthorized", "telegram_session_id"]
