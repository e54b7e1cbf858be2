"""The sandbox child process: spawning it in its own process group, limiting and stopping the group."""

from __future__ import annotations

import logging
import os
import resource
import signal
import subprocess
from collections.abc import Mapping, Sequence
from typing import Protocol

import trio

from actors.sandbox.exceptions import SandboxSetupError

log = logging.getLogger(__name__)

_GROUP_POLL_SECONDS = 0.02


class Spawner(Protocol):
    """Starts the child: given argv, cwd and env, returns a running process with stdout/stderr pipes.

    The default is :func:`spawn_child`; tests may hand in another function.
    """

    async def __call__(self, argv: Sequence[str], *, cwd: str, env: Mapping[str, str]) -> trio.Process:
        """Start the child."""
        ...


async def spawn_child(argv: Sequence[str], *, cwd: str, env: Mapping[str, str]) -> trio.Process:
    """Start ``argv`` as the leader of a new session (so of its own process group), stdin from /dev/null.

    Raises:
        SandboxSetupError: the process could not be started.
    """
    try:
        return await trio.lowlevel.open_process(
            list(argv),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        raise SandboxSetupError(f"could not start the sandbox child: {exc}") from exc


def limit_memory(pid: int, limit_mb: int) -> bool:
    """Cap the address space of a running child (the seeds' ``prlimit`` after spawn).

    A ``preexec_fn`` would do it before exec but is unsafe in a threaded process, so the child runs a
    few milliseconds unlimited. Returns False (and logs) where the platform has no ``prlimit``.
    """
    if not hasattr(resource, "prlimit"):
        log.warning("memory_limit_mb is set but this platform has no prlimit; child %d runs unlimited", pid)
        return False
    limit = limit_mb * 1024 * 1024
    try:
        resource.prlimit(pid, resource.RLIMIT_AS, (limit, limit))
    except ProcessLookupError:
        return False
    return True


def _live_members_from_proc(pgid: int) -> list[int]:
    # Zombies count as gone: their parent (an orphan reaper that may never reap) is not us.
    members = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as stat:
                data = stat.read()
        except OSError:
            continue
        fields = data[data.rindex(b")") + 2 :].split()
        if int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            members.append(int(entry.name))
    return members


def live_group_members(pgid: int) -> list[int]:
    """Pids of the process group's members that are still running (not zombies).

    Blocking (it reads /proc on Linux): call it through ``trio.to_thread.run_sync``.
    """
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return []
    except PermissionError:
        return [pgid]
    if os.path.isdir("/proc"):
        return _live_members_from_proc(pgid)
    return [pgid]


def signal_group(pgid: int, sig: signal.Signals) -> bool:
    """Send ``sig`` to every process of the group; False when the group is already gone."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    return True


async def stop_process_group(process: trio.Process, grace: float) -> None:
    """SIGTERM the child's whole process group, SIGKILL whatever is left after ``grace`` seconds.

    Returns once the child is reaped and no member of its group runs any more (a member that called
    ``setsid`` has left the group and is out of reach). Run it shielded when stopping on cancellation.
    """
    pgid = process.pid
    if await trio.to_thread.run_sync(live_group_members, pgid):
        signal_group(pgid, signal.SIGTERM)
        with trio.move_on_after(grace):
            await process.wait()
            while await trio.to_thread.run_sync(live_group_members, pgid):
                await trio.sleep(_GROUP_POLL_SECONDS)
        if await trio.to_thread.run_sync(live_group_members, pgid):
            log.info("sandbox process group %d ignored SIGTERM for %.1fs; sending SIGKILL", pgid, grace)
            signal_group(pgid, signal.SIGKILL)
    await process.wait()
