"""Configuration section ``platforms.telegram``: the Telegram bot front door.

The bot token is read from ``TELEGRAM_BOT_TOKEN`` (the daemon's environment or
``HERMES_ACTORS_HOME/.env``), Hermes's variable, unless ``token`` is set here; it is never logged.
Hermes's top-level ``telegram:`` section is read here too (``config.hermes``).
"""

from __future__ import annotations

import attrs
from attrs import validators as v

from config.gateway import GatewaySection
from config.validators import non_empty_str, positive_number

__all__ = ["TOKEN_VARIABLE", "TelegramConfig"]

#: Where the bot token comes from (Hermes's name).
TOKEN_VARIABLE = "TELEGRAM_BOT_TOKEN"


@attrs.frozen
class TelegramConfig(GatewaySection):
    """Section ``platforms.telegram``: :class:`~config.gateway.GatewaySection`'s settings, and

    Attributes:
        require_mention: as the shared one, off by default as in Hermes (``TELEGRAM_REQUIRE_MENTION``):
            Telegram's privacy mode already keeps a group's other chatter from a bot.
        max_file_mb: the largest file a user may send that is fetched (Telegram lets bots fetch 20 MB).
        base_url: the Bot API's address (a test's fake server).
        poll_timeout: seconds a ``getUpdates`` long poll waits for news.
    """

    ENV_PREFIX = "TELEGRAM"
    CHANNEL_WORD = "CHATS"
    HERMES_NAMES = {"allowed_chats": "allowed_channels", "free_response_chats": "free_response_channels"}

    require_mention: bool = attrs.field(default=False, validator=v.instance_of(bool))
    max_file_mb: float = attrs.field(default=20.0, validator=positive_number)
    base_url: str = attrs.field(default="https://api.telegram.org", validator=non_empty_str)
    poll_timeout: float = attrs.field(default=30.0, validator=positive_number)

    @property
    def max_file_bytes(self) -> int:
        """``max_file_mb`` in bytes."""
        return int(self.max_file_mb * 1024 * 1024)
