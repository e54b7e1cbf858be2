"""What every messaging platform's section shares (``platforms.telegram``, ``platforms.discord``):
who may talk, how groups and busy chats are handled, and where its sessions work."""

from __future__ import annotations

import attrs
from attrs import validators as v

from config.sandbox import SANDBOX_MODES
from config.session import BUSY_MODES
from config.validators import optional_str, positive_number

__all__ = ["DM_POLICIES", "GatewaySection"]

#: Who, beyond ``allowed_users``, may talk: users the owner paired, nobody else, or anyone.
DM_POLICIES = ("pairing", "allowlist", "open")


@attrs.frozen
class GatewaySection:
    """The settings of a messaging platform's section that every platform has.

    Attributes:
        enabled: start the platform with the daemon.
        token: the bot token; the platform's environment variable overrides it. Never logged.
        dm_policy: who may talk besides ``allowed_users``: ``pairing`` (a stranger's direct message gets a
            one-time code the owner approves with ``hermes-actors pairing approve CODE``), ``allowlist``
            (nobody: strangers are refused politely) or ``open`` (anyone).
        require_mention: in groups, answer only a message that mentions the bot or replies to it.
        group_sessions_per_user: in groups, one session per user instead of one per chat (or thread).
        busy_input_mode: what a message does while its chat's turn runs: ``interrupt`` it, wait in a
            ``queue``, or ``steer`` it (``/stop`` and the other commands always act at once).
        tool_progress: show the tools a turn runs, in one message edited as they go.
        max_file_mb: the largest file a user may send that is fetched.
        cwd: the directory the platform's sessions work in (None: the daemon user's home).
        sandbox: the sandbox mode of the platform's sessions (None: ``sandbox.mode``).
    """

    enabled: bool = attrs.field(default=False, validator=v.instance_of(bool))
    token: str | None = attrs.field(default=None, validator=optional_str, repr=False)
    dm_policy: str = attrs.field(default="pairing", validator=v.in_(DM_POLICIES))
    require_mention: bool = attrs.field(default=True, validator=v.instance_of(bool))
    group_sessions_per_user: bool = attrs.field(default=False, validator=v.instance_of(bool))
    busy_input_mode: str = attrs.field(default="interrupt", validator=v.in_(BUSY_MODES))
    tool_progress: bool = attrs.field(default=True, validator=v.instance_of(bool))
    max_file_mb: float = attrs.field(default=20.0, validator=positive_number)
    cwd: str | None = attrs.field(default=None, validator=optional_str)
    sandbox: str | None = attrs.field(default=None, validator=v.optional(v.in_(SANDBOX_MODES)))
