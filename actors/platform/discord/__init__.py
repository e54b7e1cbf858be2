"""The Discord bot front door (``platform/discord``): the Gateway's websocket for events, REST for
replies, both spoken directly (discord.py is asyncio-only)."""

from actors.platform.discord.bot import (
    DISCORD_SOURCE,
    DISCORD_TOOLSETS,
    DiscordBot,
    discord_session_id,
)

__all__ = ["DISCORD_SOURCE", "DISCORD_TOOLSETS", "DiscordBot", "discord_session_id"]
