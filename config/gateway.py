"""What every messaging platform's section shares (``platforms.telegram``, ``platforms.discord``):
who may talk, how groups and busy chats are handled, and where its sessions work.

Who may talk is read with Hermes Agent's names and variables: ``allow_from`` (or
``<PLATFORM>_ALLOWED_USERS``), ``dm_policy`` and ``require_mention`` (or ``<PLATFORM>_REQUIRE_MENTION``),
with ``<PLATFORM>_ALLOW_ALL_USERS``, ``GATEWAY_ALLOWED_USERS`` and ``GATEWAY_ALLOW_ALL_USERS`` for
every platform. As for the bot token, a variable that is set wins over ``config.yaml``.

Per channel, as Hermes: ``allowed_channels`` (the only group chats answered), ``free_response_channels``
(group chats answered without a mention), ``mention_patterns`` (words that count as a mention) and ``channel_prompts`` (a chat's own system-prompt addition).
Hermes names the first two after its platform's word for a chat (Telegram's ``allowed_chats``, Matrix's
``free_response_rooms``): :attr:`GatewaySection.HERMES_NAMES` lists those, read as ours
(``config.hermes``), and :attr:`GatewaySection.CHANNEL_WORD` names their variables.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

import attrs
from attrs import validators as v

from config.sandbox import SANDBOX_MODES
from config.session import BUSY_MODES
from config.validators import optional_str, str_tuple

__all__ = ["DM_POLICIES", "EVERYONE", "GatewaySection", "read_access_environment", "read_channel_prompts"]

#: What a direct message from someone not let in gets: a pairing code, silence, anyone is let in, or
#: no direct messages are answered at all (Hermes's ``dm_policy`` words).
DM_POLICIES = ("pairing", "allowlist", "open", "disabled")

#: In ``allow_from`` (and the group lists), the entry that lets everyone in, as in Hermes.
EVERYONE = "*"

_TRUE = ("true", "1", "yes", "on")

Section = TypeVar("Section", bound="GatewaySection")


def _patterns(instance: object, attribute: attrs.Attribute[Any], value: tuple[str, ...]) -> None:
    """Each entry is a regular expression (refused by name here; Hermes logs and skips a bad one)."""
    for pattern in value:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"{attribute.name} has {pattern!r}, not a regular expression: {exc}") from None


def read_channel_prompts(value: dict[str, str]) -> dict[str, str]:
    """A ``channel_prompts`` mapping with each prompt stripped and the blank ones dropped, as Hermes reads
    them (a blank prompt is no prompt)."""
    return {key: prompt.strip() for key, prompt in value.items() if prompt.strip()}


@attrs.frozen
class GatewaySection:
    """The settings of a messaging platform's section that every platform has.

    Attributes:
        enabled: start the platform with the daemon.
        token: the bot token; the platform's environment variable overrides it. Never logged.
        allow_from: user ids let in everywhere (``*``: everyone); Hermes's key. A list, or one
            comma-separated string as Hermes writes it.
        group_allow_from: user ids let in only in groups (``*``: everyone in any group); Hermes's key.
        group_allowed_chats: group chats (ids) whose every member is let in; Hermes's key.
        dm_policy: what a direct message from someone not let in gets: ``pairing`` (a one-time code the
            owner approves with ``hermes-actors pairing approve CODE``), ``allowlist`` (nothing: it is
            ignored and logged), ``open`` (anyone may talk) or ``disabled`` (no direct message is
            answered). Unset, as in Hermes: ``allowlist`` when an allow list is set, else ``pairing``.
        require_mention: in groups, answer only a message that mentions the bot or replies to it.
        allowed_channels: when set, the only group chats (channels, rooms) answered, even when the bot is
            mentioned there; direct messages are never filtered. Hermes's key (Telegram: ``allowed_chats``,
            Matrix: ``allowed_rooms``) and ``<P>_ALLOWED_CHANNELS`` variable.
        free_response_channels: group chats answered without a mention (``*``: all), whatever
            ``require_mention`` says; Hermes's key (Telegram: ``free_response_chats``, Matrix:
            ``free_response_rooms``) and ``<P>_FREE_RESPONSE_CHANNELS`` variable.
        mention_patterns: regular expressions (case-insensitive) a group message matching counts as
            addressed to the bot, as a mention does (Hermes's wake words; ``<P>_MENTION_PATTERNS``).
        channel_prompts: chat id (or thread id) to text added to the system prompt of that chat's turns,
            for that turn only (never stored), as Hermes adds it; a thread's entry wins over its chat's.
        home_channel: the chat or channel a bare platform destination means (cron's ``--deliver telegram``);
            Hermes's key (its mapping form is read as its ``chat_id``) and ``<P>_HOME_CHANNEL`` variable.
        group_sessions_per_user: in groups, one session per user instead of one per chat (or thread).
        busy_input_mode: what a message does while its chat's turn runs: ``interrupt`` it, wait in a
            ``queue``, or ``steer`` it (``/stop`` and the other commands always act at once).
        tool_progress: show the tools a turn runs, in one message edited as they go.
        cwd: the directory the platform's sessions work in (None: the daemon user's home).
        sandbox: the sandbox mode of the platform's sessions (None: ``sandbox.mode``).
    """

    #: The prefix of the platform's Hermes variables (``TELEGRAM`` for ``TELEGRAM_ALLOWED_USERS``).
    ENV_PREFIX = ""
    #: Hermes's word for a group chat in the per-channel variables (``TELEGRAM_ALLOWED_CHATS``).
    CHANNEL_WORD = "CHANNELS"
    #: Hermes's own names of this platform's per-channel keys, read as ours (``config.hermes``).
    HERMES_NAMES: ClassVar[Mapping[str, str]] = {}

    enabled: bool = attrs.field(default=False, validator=v.instance_of(bool))
    token: str | None = attrs.field(default=None, validator=optional_str, repr=False)
    allow_from: tuple[str, ...] = attrs.field(default=(), converter=tuple, validator=str_tuple)
    group_allow_from: tuple[str, ...] = attrs.field(default=(), converter=tuple, validator=str_tuple)
    group_allowed_chats: tuple[str, ...] = attrs.field(default=(), converter=tuple, validator=str_tuple)
    dm_policy: str | None = attrs.field(default=None, validator=v.optional(v.in_(DM_POLICIES)))
    require_mention: bool = attrs.field(default=True, validator=v.instance_of(bool))
    allowed_channels: tuple[str, ...] = attrs.field(default=(), converter=tuple, validator=str_tuple)
    free_response_channels: tuple[str, ...] = attrs.field(default=(), converter=tuple, validator=str_tuple)
    mention_patterns: tuple[str, ...] = attrs.field(default=(), converter=tuple, validator=[str_tuple, _patterns])
    channel_prompts: dict[str, str] = attrs.field(
        factory=dict, converter=read_channel_prompts,
        validator=v.deep_mapping(key_validator=v.instance_of(str), value_validator=v.instance_of(str)),
    )
    home_channel: int | None = attrs.field(default=None, validator=v.optional(v.instance_of(int)))
    group_sessions_per_user: bool = attrs.field(default=False, validator=v.instance_of(bool))
    busy_input_mode: str = attrs.field(default="interrupt", validator=v.in_(BUSY_MODES))
    tool_progress: bool = attrs.field(default=True, validator=v.instance_of(bool))
    cwd: str | None = attrs.field(default=None, validator=optional_str)
    sandbox: str | None = attrs.field(default=None, validator=v.optional(v.in_(SANDBOX_MODES)))

    @property
    def effective_dm_policy(self) -> str:
        """``dm_policy``, or Hermes's default when unset: strangers are ignored once an allow list says who
        may talk, and offered a pairing code while none does."""
        if self.dm_policy is not None:
            return self.dm_policy
        listed = self.allow_from or self.group_allow_from or self.group_allowed_chats
        return "allowlist" if listed else "pairing"

    @property
    def max_file_bytes(self) -> int:
        """The largest file a user may send that is fetched; 0: no cap."""
        raise NotImplementedError


def read_access_environment(section: Section, environ: Mapping[str, str]) -> Section:
    """``section`` with Hermes's variables of its platform applied (a variable that is set wins).

    ``<P>_ALLOWED_USERS`` replaces ``allow_from``, ``<P>_GROUP_ALLOWED_USERS`` ``group_allow_from`` and
    ``<P>_GROUP_ALLOWED_CHATS`` ``group_allowed_chats``; ``GATEWAY_ALLOWED_USERS`` adds to ``allow_from`` on every
    platform; ``<P>_ALLOW_ALL_USERS`` or ``GATEWAY_ALLOW_ALL_USERS`` (true, 1, yes) lets everyone in;
    ``<P>_REQUIRE_MENTION`` sets ``require_mention`` and ``<P>_HOME_CHANNEL`` (a chat id) ``home_channel``;
    ``<P>_MENTION_PATTERNS`` (a JSON list, or comma- or line-separated) ``mention_patterns``;
    ``<P>_ALLOWED_CHANNELS`` and ``<P>_FREE_RESPONSE_CHANNELS`` (``CHATS`` on Telegram, ``ROOMS`` on Matrix)
    replace ``allowed_channels`` and ``free_response_channels``. Lists are comma-separated, as Hermes reads them.
    """
    prefix, word = section.ENV_PREFIX, section.CHANNEL_WORD
    changes: dict[str, Any] = {}  # field name to new value, of that field's type
    for key, variable in (
        ("group_allow_from", "GROUP_ALLOWED_USERS"), ("group_allowed_chats", "GROUP_ALLOWED_CHATS"),
        ("allowed_channels", f"ALLOWED_{word}"), ("free_response_channels", f"FREE_RESPONSE_{word}"),
    ):
        value = environ.get(f"{prefix}_{variable}", "").strip()
        if value:
            changes[key] = tuple(split_ids(value))
    allow_from = list(section.allow_from)
    own = environ.get(f"{prefix}_ALLOWED_USERS", "").strip()
    if own:
        allow_from = split_ids(own)
    allow_from += split_ids(environ.get("GATEWAY_ALLOWED_USERS", ""))
    if any(environ.get(name, "").strip().lower() in _TRUE for name in (f"{prefix}_ALLOW_ALL_USERS", "GATEWAY_ALLOW_ALL_USERS")):
        allow_from.append(EVERYONE)
    if tuple(allow_from) != section.allow_from:
        changes["allow_from"] = tuple(dict.fromkeys(allow_from))
    mention = environ.get(f"{prefix}_REQUIRE_MENTION", "").strip().lower()
    if mention:
        changes["require_mention"] = mention in _TRUE
    patterns = environ.get(f"{prefix}_MENTION_PATTERNS", "").strip()
    if patterns:
        changes["mention_patterns"] = tuple(_pattern_list(patterns))
    home = environ.get(f"{prefix}_HOME_CHANNEL", "").strip()
    if home.lstrip("-").isdigit():
        changes["home_channel"] = int(home)
    return attrs.evolve(section, **changes) if changes else section


def _pattern_list(text: str) -> list[str]:
    """``<P>_MENTION_PATTERNS`` as Hermes reads it: a JSON list, else one pattern a line or comma."""
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if isinstance(value, list):
        return [str(item) for item in value if str(item).strip()]
    return [part.strip() for part in text.replace("\n", ",").split(",") if part.strip()]


def split_ids(text: str) -> list[str]:
    """The ids of a comma-separated list (``"123, 456"``), as Hermes's variables hold them."""
    return [part.strip() for part in text.split(",") if part.strip()]
