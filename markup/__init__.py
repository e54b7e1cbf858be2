"""Replies rendered for messaging platforms: each platform's dialect, split at its limits, and the
files a reply asks to attach (``MEDIA:/path``). Pure functions, no I/O."""

from markup.discord import DISCORD_LIMIT, discord_chunks, to_discord
from markup.matrix import matrix_chunks, to_matrix_html
from markup.media import extract_media
from markup.slack import SLACK_LIMIT, slack_chunks, to_mrkdwn
from markup.split import split_markdown, utf16_length
from markup.telegram import TELEGRAM_LIMIT, telegram_chunks, to_telegram_html
from markup.whatsapp import WHATSAPP_LIMIT, to_whatsapp, whatsapp_chunks

__all__ = [
    "DISCORD_LIMIT",
    "SLACK_LIMIT",
    "TELEGRAM_LIMIT",
    "WHATSAPP_LIMIT",
    "discord_chunks",
    "extract_media",
    "matrix_chunks",
    "slack_chunks",
    "split_markdown",
    "telegram_chunks",
    "to_mrkdwn",
    "to_discord",
    "to_matrix_html",
    "to_telegram_html",
    "to_whatsapp",
    "utf16_length",
    "whatsapp_chunks",
]
