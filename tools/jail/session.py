"""A session's jail: its policy and the daemon's launcher that applies it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from tools.jail.policy import JailPolicy

if TYPE_CHECKING:
    from tools.jail.launcher import Launcher

__all__ = ["SessionJail"]


@attrs.frozen
class SessionJail:
    """What a tool handler needs to start a process or touch a file under its session's policy.

    Attributes:
        policy: What the session's tools may read and write.
        launcher: The daemon's launcher; every process a tool starts goes through it. None where a
            context starts no processes (file tools alone).
    """

    policy: JailPolicy
    launcher: Launcher | None = None
