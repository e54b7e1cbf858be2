"""Configuration section ``platforms.discord``: the Discord bot front door.

The bot token is read from ``DISCORD_BOT_TOKEN`` (the daemon's environment or
``HERMES_ACTORS_HOME/.env``), Hermes's variable, unless ``token`` is set here; it is never logged.
The bot needs the Message Content intent (the Developer Portal's switch) to read what users write.
"""

from __future__ import annotations

import attrs
from attrs import validators as v

from config.gateway import GatewaySection
from config.validators import non_empty_str, optional_str

__all__ = ["TOKEN_VARIABLE", "DiscordConfig"]

#: Where the bot token comes from (Hermes's name).
TOKEN_VARIABLE = "DISCORD_BOT_TOKEN"


@attrs.frozen
class DiscordConfig(GatewaySection):
    """Section ``platforms.discord``: :class:`~config.gateway.GatewaySection`'s settings, and

    Attributes:
        allowed_users: Discord user ids (snowflakes, as numbers) that may talk to the agent.
        home_channel: the channel a bare ``discord`` destination means (cron's ``--deliver discord``).
        api_url: the REST API's address, with its version (a test's fake server).
        gateway_url: the Gateway's websocket address (None: asked of ``GET /gateway/bot``).
    """

    allowed_users: tuple[int, ...] = attrs.field(default=(), converter=tuple, validator=v.deep_iterable(v.instance_of(int)))
    home_channel: int | None = attrs.field(default=None, validator=v.optional(v.instance_of(int)))
    api_url: str = attrs.field(default="https://discord.com/api/v10", validator=non_empty_str)
    gateway_url: str | None = attrs.field(default=None, validator=optional_str)
