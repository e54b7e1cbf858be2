"""Signalling and reaping a child's whole process group.

Every shell the terminal starts leads its own session and process group
(``start_new_session=True``), so one ``killpg`` reaches the shell, its children and
their children. Trio's default cancel delivery signals only the leader, which would
leave grandchildren running and holding our pipes.
"""

from __future__ import annotations

import os
import signal
import subprocess

import trio

__all__ = ["open_group_process", "signal_group", "terminate_group"]


async def open_group_process(argv: list[str], *, cwd: str, env: dict[str, str], stdin: int) -> trio.Process:
    """Spawn ``argv`` as the leader of a new session and process group.

    stdout and stderr share one pipe (``process.stdout``), as a terminal shows them;
    ``stdin`` is ``subprocess.DEVNULL`` or ``subprocess.PIPE``.

    Raises:
        OSError: the program or ``cwd`` does not exist, or cannot be executed.
    """
    return await trio.lowlevel.open_process(
        argv,
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=cwd,
        env=env,
        start_new_session=True,
    )


def signal_group(process: trio.Process, signum: int) -> bool:
    """Send ``signum`` to the process group led by ``process``; False when the group is gone."""
    try:
        os.killpg(process.pid, signum)
    except ProcessLookupError:
        return False
    except PermissionError:
        # The group id was recycled by a process we do not own: nothing of ours is left.
        return False
    return True


async def terminate_group(process: trio.Process, grace_seconds: float) -> bool:
    """Stop every process in ``process``'s group: SIGTERM, then SIGKILL after ``grace_seconds``.

    The SIGKILL goes to the group even when the leader exited in time, because a
    grandchild that ignores SIGTERM must not survive its shell. Runs shielded, so it
    completes when called from a cancelled scope; returns once the leader is reaped.

    Returns:
        True when something of the group was still there to be signalled.
    """
    with trio.CancelScope(shield=True):
        present = signal_group(process, signal.SIGTERM)
        if present:
            with trio.move_on_after(grace_seconds):
                await process.wait()
            signal_group(process, signal.SIGKILL)
        await process.wait()
    return present
