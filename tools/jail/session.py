"""A session's jail: its policy and the daemon's launcher that applies it."""

from __future__ import annotations

import functools
import os
import subprocess
import tempfile
from collections.abc import Awaitable, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import trio

from tools.jail.launcher import JailUnavailable, start_process
from tools.jail.limits import limits_reached
from tools.jail.policy import HiddenPath, JailPolicy, SandboxMode
from tools.jail.resident import ResidentShell

if TYPE_CHECKING:
    from tools.jail.launcher import Launcher
    from tools.jail.process import JailedProcess

__all__ = ["SessionJail"]


@attrs.frozen
class SessionJail:
    """What a tool handler needs to start a process or touch a file under its session's policy.

    Attributes:
        policy: What the session's tools may read and write.
        launcher: The daemon's launcher; every process a tool starts goes through it. None where no
            daemon runs (tests, benchmarks): a ``full-access`` session then starts its processes
            directly, a jailed one cannot start any.
        shell: The session's resident shell for foreground terminal commands (made with the launcher;
            it starts no process until the first command). A jail evolved with another policy shares it:
            the resident then starts again under the new policy. Close it with :meth:`aclose`.
    """

    policy: JailPolicy
    launcher: Launcher | None = None
    shell: ResidentShell | None = attrs.field(
        default=attrs.Factory(lambda jail: None if jail.launcher is None else ResidentShell(jail.launcher), takes_self=True),
        eq=False, repr=False,
    )  # fmt: skip

    @classmethod
    def full_access(cls, home: str | os.PathLike[str], workspace: str, launcher: Launcher | None = None) -> SessionJail:
        """A ``full-access`` jail with the daemon's home hidden (from the file tools): where no daemon runs."""
        hidden = (HiddenPath(os.path.realpath(home), "the daemon's home, HERMES_ACTORS_HOME, is always hidden"),)
        policy = JailPolicy(
            mode=SandboxMode.FULL_ACCESS,
            workspace=os.path.realpath(workspace),
            tmp_dir=os.path.realpath(tempfile.gettempdir()),
            hidden=hidden,
        )
        return cls(policy, launcher)

    async def aclose(self) -> None:
        """End the session's resident shell, if one runs (at the session's end; shielded)."""
        if self.shell is not None:
            await self.shell.aclose()

    async def limits_reached(self) -> list[str]:
        """What the model should be told of its session's limits after a command failed: each limit the
        kernel enforced since the last look (see :func:`~tools.jail.limits.limits_reached`)."""
        policy = self.policy
        if policy.cgroup is None and not policy.jailed:
            return []
        return await trio.to_thread.run_sync(limits_reached, policy.limits, policy.cgroup, policy.tmp_dir)

    async def spawn(self, argv: Sequence[str], **options: Any) -> JailedProcess:
        """Start ``argv`` under this session's policy (``Launcher.spawn``'s keyword arguments).

        Raises:
            JailUnavailable: the session is jailed and there is no launcher, or no jail can run.
            PathRefused, LauncherClosed, OSError: as ``Launcher.spawn``.
        """
        if self.launcher is not None:
            return await self.launcher.spawn(argv, policy=self.policy, **options)
        if self.policy.jailed:
            raise JailUnavailable(
                f"This {self.policy.mode.value} session has no launcher, so it cannot start processes; "
                "set sandbox.mode: full-access only if tools may run unjailed."
            )
        # ``binds`` need nothing: an unjailed process sees the whole file system.
        return await start_process(
            _worker_popen,
            list(argv),
            options["env"],
            jailed=False,
            stdin=options.get("stdin", False),
            merge_stderr=options.get("merge_stderr", False),
            cwd=options["cwd"],
            pass_fds=options.get("pass_fds", ()),
        )


def _worker_popen(argv: list[str], **options: Any) -> Awaitable[subprocess.Popen[Any]]:
    # Without --die-with-parent no thread's life matters: a Trio worker thread may fork.
    return trio.to_thread.run_sync(functools.partial(subprocess.Popen, argv, **options))
