"""Configuration section ``platforms.telegram``: the Telegram bot front door.

The bot token is read from ``TELEGRAM_BOT_TOKEN`` (the daemon's environment or
``HERMES_ACTORS_HOME/.env``), Hermes's variable, unless ``token`` is set here; it is never logged.
"""

from __future__ import annotations

import attrs
from attrs import validators as v

from config.sandbox import SANDBOX_MODES
from config.session import BUSY_MODES
from config.validators import non_empty_str, optional_str, positive_number

__all__ = ["DM_POLICIES", "TOKEN_VARIABLE", "TelegramConfig"]

#: Where the bot token comes from (Hermes's name).
TOKEN_VARIABLE = "TELEGRAM_BOT_TOKEN"
#: Who, beyond ``allowed_users``, may talk: users the owner paired, nobody else, or anyone.
DM_POLICIES = ("pairing", "allowlist", "open")


@attrs.frozen
class TelegramConfig:
    """Section ``platforms.telegram``.

    Attributes:
        enabled: start the bot with the daemon.
        token: the bot token; ``TELEGRAM_BOT_TOKEN`` overrides it.
        allowed_users: Telegram user ids that may talk to the agent.
        dm_policy: who else may: ``pairing`` (a stranger's direct message gets a one-time code the owner
            approves with ``hermes-actors pairing approve CODE``), ``allowlist`` (nobody: strangers are
            refused politely) or ``open`` (anyone).
        require_mention: in groups, answer only a message that mentions the bot or replies to it.
        group_sessions_per_user: in groups, one session per user instead of one per chat (or topic).
        busy_input_mode: what a message does while its chat's turn runs: ``interrupt`` it, wait in a
            ``queue``, or ``steer`` it (``/stop`` and the other commands always act at once).
        tool_progress: show the tools a turn runs, in one message edited as they go.
        max_file_mb: the largest file a user may send that is fetched (Telegram's bots get at most 20 MB).
        home_channel: the chat a bare ``telegram`` destination means (cron's ``--deliver telegram``).
        base_url: the Bot API's address (a test's fake server).
        poll_timeout: seconds a ``getUpdates`` long poll waits for news.
        cwd: the directory Telegram sessions work in (None: the daemon user's home).
        sandbox: the sandbox mode of Telegram sessions (None: ``sandbox.mode``).
    """

    enabled: bool = attrs.field(default=False, validator=v.instance_of(bool))
    token: str | None = attrs.field(default=None, validator=optional_str, repr=False)
    allowed_users: tuple[int, ...] = attrs.field(default=(), converter=tuple, validator=v.deep_iterable(v.instance_of(int)))
    dm_policy: str = attrs.field(default="pairing", validator=v.in_(DM_POLICIES))
    require_mention: bool = attrs.field(default=True, validator=v.instance_of(bool))
    group_sessions_per_user: bool = attrs.field(default=False, validator=v.instance_of(bool))
    busy_input_mode: str = attrs.field(default="interrupt", validator=v.in_(BUSY_MODES))
    tool_progress: bool = attrs.field(default=True, validator=v.instance_of(bool))
    max_file_mb: float = attrs.field(default=20.0, validator=positive_number)
    home_channel: int | None = attrs.field(default=None, validator=v.optional(v.instance_of(int)))
    base_url: str = attrs.field(default="https://api.telegram.org", validator=non_empty_str)
    poll_timeout: float = attrs.field(default=30.0, validator=positive_number)
    cwd: str | None = attrs.field(default=None, validator=optional_str)
    sandbox: str | None = attrs.field(default=None, validator=v.optional(v.in_(SANDBOX_MODES)))
