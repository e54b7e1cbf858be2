"""Configuration section ``platforms.discord``: the Discord bot front door.

The bot token is read from ``DISCORD_BOT_TOKEN`` (the daemon's environment or
``HERMES_ACTORS_HOME/.env``), Hermes's variable, unless ``token`` is set here; it is never logged.
The bot needs the Message Content intent (the Developer Portal's switch) to read what users write.
Hermes's top-level ``discord:`` section is read here too (``config.hermes``).
"""

from __future__ import annotations

import attrs
from attrs import validators as v

from config.gateway import GatewaySection
from config.validators import integer, non_empty_str, optional_str

__all__ = ["MAX_ATTACHMENT_BYTES", "TOKEN_VARIABLE", "DiscordConfig"]

#: Where the bot token comes from (Hermes's name).
TOKEN_VARIABLE = "DISCORD_BOT_TOKEN"

#: Hermes's cap on a user's attachment: 32 MiB.
MAX_ATTACHMENT_BYTES = 32 * 1024 * 1024


@attrs.frozen
class DiscordConfig(GatewaySection):
    """Section ``platforms.discord``: :class:`~config.gateway.GatewaySection`'s settings, and

    Attributes:
        max_attachment_bytes: the largest attachment a user may send that is fetched (0: no cap);
            Hermes's key and default, 32 MiB.
        allow_any_attachment: Hermes's key, read and without effect, as in Hermes 0.19 (where it is
            deprecated): every type of file is fetched, within ``max_attachment_bytes``.
        reactions: mark a message being worked on with 👀, and with ✅ once answered (Hermes's key, on by
            default as its ``DISCORD_REACTIONS``).
        api_url: the REST API's address, with its version (a test's fake server).
        gateway_url: the Gateway's websocket address (None: asked of ``GET /gateway/bot``).
    """

    ENV_PREFIX = "DISCORD"

    max_attachment_bytes: int = attrs.field(default=MAX_ATTACHMENT_BYTES, validator=integer(ge=0))
    allow_any_attachment: bool = attrs.field(default=False, validator=v.instance_of(bool))
    reactions: bool = attrs.field(default=True, validator=v.instance_of(bool))
    api_url: str = attrs.field(default="https://discord.com/api/v10", validator=non_empty_str)
    gateway_url: str | None = attrs.field(default=None, validator=optional_str)

    @property
    def max_file_bytes(self) -> int:
        """``max_attachment_bytes``."""
        return self.max_attachment_bytes
