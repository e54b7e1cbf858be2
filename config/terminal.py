"""Configuration sections of the terminal, background-process, approval and web tools.

Yaml keys: ``terminal`` (with a nested ``background`` block), ``approvals`` and ``web``.
Defaults come from the specification (docs/DECISIONS.md#d-terminal-defaults); validators turn a bad
value into a load-time error naming the field.
"""

from __future__ import annotations

import attrs
from attrs import validators as v

from config.validators import (
    integer,
    non_empty_str,
    non_negative_number,
    optional_str,
    positive_int,
    positive_number,
    str_tuple,
)

__all__ = ["SEARCH_BACKENDS", "ApprovalsConfig", "BackgroundConfig", "TerminalConfig", "WebConfig"]


@attrs.frozen
class BackgroundConfig:
    """Section ``terminal.background``: limits of the background processes of one session."""

    max_tracked: int = attrs.field(default=64, validator=positive_int)
    buffer_chars: int = attrs.field(default=200_000, validator=positive_int)
    finished_ttl_seconds: float = attrs.field(default=1800.0, validator=positive_number)
    notify_tail_chars: int = attrs.field(default=2000, validator=positive_int)
    poll_tail_chars: int = attrs.field(default=1000, validator=positive_int)
    log_default_lines: int = attrs.field(default=200, validator=positive_int)
    # How long process(write) waits for room in the stdin pipe of a process that is not reading.
    write_patience_seconds: float = attrs.field(default=5.0, validator=positive_number)
    # watch_patterns rate limits: one notification per window per process ...
    watch_window_seconds: float = attrs.field(default=15.0, validator=positive_number)
    watch_max_lines: int = attrs.field(default=20, validator=positive_int)
    watch_max_chars: int = attrs.field(default=2000, validator=positive_int)
    # ... consecutive windows with suppressed matches before the watch is disabled, and notifications
    # over the process's life before it is (Hermes: a signal meant to be rare that keeps coming) ...
    watch_max_suppressed_windows: int = attrs.field(default=3, validator=positive_int)
    watch_max_hits: int = attrs.field(default=8, validator=positive_int)
    # ... and a breaker over all processes of the session.
    breaker_max_events: int = attrs.field(default=15, validator=positive_int)
    breaker_window_seconds: float = attrs.field(default=10.0, validator=positive_number)
    breaker_silence_seconds: float = attrs.field(default=30.0, validator=positive_number)


@attrs.frozen
class TerminalConfig:
    """Section ``terminal``: the foreground terminal tool and its shell.

    ``timeout`` (Hermes's name and default) is a foreground command's timeout when the model gives
    none, and the longest ``process(action='wait')`` blocks. As in Hermes, ``max_foreground_timeout``
    bounds only a timeout the model asks for, so a larger ``timeout`` is allowed. ``env_passthrough`` lists variables
    the secret filter would drop that may still reach the shell (see ``tools.jail.environment``).
    """

    timeout: float = attrs.field(default=180.0, validator=positive_number)
    max_foreground_timeout: float = attrs.field(default=600.0, validator=positive_number)
    env_passthrough: tuple[str, ...] = attrs.field(default=(), converter=tuple, validator=str_tuple)
    # Bytes of output kept: 40% from the head, 60% from the tail, a notice for the rest.
    max_output_bytes: int = attrs.field(default=50_000, validator=integer(ge=1000))
    kill_grace_seconds: float = attrs.field(default=2.0, validator=non_negative_number)
    # After the shell exits, how long to wait for processes it left holding the output pipe.
    exit_drain_seconds: float = attrs.field(default=0.5, validator=non_negative_number)
    shell: str = attrs.field(default="bash", validator=non_empty_str)
    # Live output of a running foreground command goes to watchers at most this often.
    progress_interval_seconds: float = attrs.field(default=1.0, validator=non_negative_number)
    # A jailed session's foreground commands run in one jail kept per session (tools.jail.resident) rather
    # than a new jail each; it ends after this long without a command.
    resident_shell: bool = attrs.field(default=True, validator=v.instance_of(bool))
    resident_idle_seconds: float = attrs.field(default=300.0, validator=positive_number)
    background: BackgroundConfig = attrs.field(factory=BackgroundConfig, validator=v.instance_of(BackgroundConfig))


def _globs(value: object) -> tuple[str, ...]:
    """``approvals.deny`` as a tuple of globs: a list of non-empty strings (one string alone is refused,
    as ``tuple()`` would split it into characters, each of which would then forbid nearly everything)."""
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise TypeError(f"'deny' must be a list of glob strings such as ['git push *'], not {value!r}")
    for glob in value:
        if not isinstance(glob, str) or not glob.strip():
            raise TypeError(f"'deny' must hold non-empty glob strings; {glob!r} is not one")
    return tuple(glob.strip() for glob in value)


@attrs.frozen
class ApprovalsConfig:
    """Section ``approvals``: who approves dangerous commands (see ``tools.approval_policy``).

    ``mode``: ``manual`` asks the user, ``smart`` lets the auxiliary model approve low-risk
    and deny dangerous commands (asking about the rest), ``off`` approves everything.
    ``cron_mode`` decides for cron sessions, which have no one to ask. ``send_message`` makes the
    model's ``send_message`` ask before each message it sends to a chat. ``allow`` lists the
    pattern keys answered ``always`` (the daemon adds to it; Hermes's ``command_allowlist`` is read
    here too). ``deny`` lists the user's own never-run commands: shell-style globs (``git push *``),
    matched without regard to case against the command as the guard reads it, and refused before
    ``--yolo`` or ``mode: off`` is consulted (see ``tools.approval``). A request nobody answers within
    ``timeout`` seconds (Hermes's name and default, 60) counts as denied.
    """

    # YAML 1.1 reads a bare ``off`` as false: that is what the user meant. The annotation is what the file may
    # hold (the config loader checks it before the converter runs); the attribute is always a string.
    mode: str | bool = attrs.field(
        default="manual", converter=lambda mode: "off" if mode is False else mode, validator=v.in_(("manual", "smart", "off"))
    )
    cron_mode: str = attrs.field(default="deny", validator=v.in_(("deny", "approve")))
    allow: tuple[str, ...] = attrs.field(default=(), converter=tuple, validator=str_tuple)
    deny: tuple[str, ...] = attrs.field(default=(), converter=_globs, validator=str_tuple)
    timeout: float = attrs.field(default=60.0, validator=positive_number)
    send_message: bool = attrs.field(default=False, validator=v.instance_of(bool))


#: The search backends built here, by Hermes's names.
SEARCH_BACKENDS = ("searxng", "brave-free")


@attrs.frozen
class WebConfig:
    """Section ``web``: which search backend ``web_search`` uses and how ``web_extract`` fetches.

    As in Hermes: ``search_backend`` is used when it is available; otherwise ``backend``, whose ``auto``
    picks SearXNG when its address is known (``SEARXNG_URL``, or ``searxng_url``), else Brave when its
    key is set (``BRAVE_SEARCH_API_KEY``); with neither the web tools are hidden from the model.
    ``none`` (ours) turns web search off.
    """

    backend: str = attrs.field(default="auto", validator=v.in_(("auto", *SEARCH_BACKENDS, "none")))
    search_backend: str | None = attrs.field(default=None, validator=v.optional(v.in_(SEARCH_BACKENDS)))
    searxng_url: str | None = attrs.field(default=None, validator=optional_str)
    brave_api_key_env: str = attrs.field(default="BRAVE_SEARCH_API_KEY", validator=v.instance_of(str))
    brave_base_url: str = attrs.field(
        default="https://api.search.brave.com/res/v1/web/search", validator=v.instance_of(str)
    )
    # How much of each page web_extract returns inline (Hermes's key and default); the rest is saved to a file.
    extract_char_limit: int = attrs.field(default=15_000, validator=integer(ge=2_000))
    max_download_bytes: int = attrs.field(default=5_000_000, validator=positive_int)
    # web_extract refuses loopback, private and link-local hosts unless this is set.
    allow_private_addresses: bool = attrs.field(default=False, validator=v.instance_of(bool))
    request_timeout_seconds: float = attrs.field(default=20.0, validator=positive_number)
    user_agent: str = attrs.field(default="hermes-actors/0.1 (+web_extract)", validator=v.instance_of(str))
