"""A session's jail: its policy and the daemon's launcher that applies it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs

from tools.errors import CapabilityUnavailable
from tools.jail.launcher import JailUnavailable
from tools.jail.policy import JailPolicy

if TYPE_CHECKING:
    from tools.jail.launcher import Launcher
    from tools.jail.process import JailedProcess

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

    async def spawn(self, argv: Sequence[str], **options: Any) -> JailedProcess:
        """Start ``argv`` under this session's policy (``Launcher.spawn``'s keyword arguments).

        Raises:
            JailUnavailable: the session is jailed and no launcher is here (or no jail can run).
            CapabilityUnavailable: a full-access context without a launcher.
        """
        if self.launcher is None:
            if self.policy.jailed:
                raise JailUnavailable(
                    f"This {self.policy.mode.value} session has no launcher, so it cannot start processes; "
                    "set sandbox.mode: full-access only if tools may run unjailed."
                )
            raise CapabilityUnavailable("processes cannot be started in this context (no launcher)")
        return await self.launcher.spawn(argv, policy=self.policy, **options)
