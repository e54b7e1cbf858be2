"""A session's limits on a new jail: how each is enforced here, and putting a jail under them before it runs.

Each limit of ``sandbox.limits`` uses the best mechanism this machine gives the daemon, chosen once at
start (:func:`choose_mechanisms`) and shown by ``status``:

- ``pids``: the session's control group (``pids.max``); else ``RLIMIT_NPROC`` in the jail's user namespace,
  per jail (none for a root daemon: root is exempt from it);
- ``memory_mb``: the session's control group; else ``RLIMIT_DATA``, per process;
- ``cpu_weight``: the session's control group; else a nice value, per jail (weights under 100 only);
- ``tmp_mb``: one tmpfs of that size over the runtime directory, every session's ``/tmp`` in it and each one's
  share charged to its memory group (needs ``CAP_SYS_ADMIN``); else none: ``/tmp`` is on the host's disk;
- ``shm_mb``: a tmpfs of that size at each jail's ``/dev/shm`` (bubblewrap's ``--size``), always.

A ``full-access`` session (and an MCP server not narrowed by its ``sandbox``) has the daemon's authority and no
limits: it runs in a PID namespace of its own, with nothing to stop it but the daemon's own limits.

A jail is put under them before its command runs: bubblewrap is started with ``--info-fd`` and
``--block-fd``; once it has made the jail's init (whose pid ``--info-fd`` reports) and waits on the block
descriptor, both pids are written into the session's groups and the fallbacks' limits set, and only then
does it go on (:func:`settle`). Whatever the command starts is born inside the groups.
Moving a process costs about 0.03 ms a controller; a wrapper process that moved itself cost 1.3 ms.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import resource
import signal

import attrs
import trio

from config.sandbox import SandboxLimits
from tools.errors import ToolError
from tools.jail.cgroups import CgroupTree, SessionCgroup

__all__ = [
    "Fallbacks", "LimitsNotApplied", "SettleFds", "choose_mechanisms", "fallbacks_for", "limits_reached", "nice_for",
    "settle",
]  # fmt: skip

# bubblewrap reports its child within milliseconds; a bound for a bwrap stuck in a broken mount.
_INFO_SECONDS = 10.0


class LimitsNotApplied(ToolError, RuntimeError):
    """A jail could not be put under its session's limits; it was stopped before running anything."""


def nice_for(cpu_weight: int) -> int:
    """The nice value whose CPU share matches ``cpu_weight`` (100 is nice 0; each nice step is ~1.25x)."""
    if cpu_weight >= 100:
        return 0
    return min(19, round(math.log(100 / cpu_weight, 1.25)))


@attrs.frozen
class Fallbacks:
    """The resource limits a jail gets where its session's control group does not cover a limit.

    Attributes:
        nproc: ``RLIMIT_NPROC`` of the jail (per jail, counted in its own user namespace), None for none.
        data_bytes: ``RLIMIT_DATA`` of each process, None for none.
        nice: The jail's nice value (0: unchanged).
    """

    nproc: int | None = None
    data_bytes: int | None = None
    nice: int = 0

    @property
    def needed(self) -> bool:
        """Whether anything has to be set on a new jail."""
        return self.nproc is not None or self.data_bytes is not None or self.nice != 0


def fallbacks_for(limits: SandboxLimits, mechanisms: dict[str, str]) -> Fallbacks:
    """What a jail gets beside its control group, by the mechanism chosen for each limit."""
    return Fallbacks(
        nproc=limits.pids if mechanisms.get("pids", "").startswith("rlimit") else None,
        data_bytes=limits.memory_mb * 1024 * 1024 if mechanisms.get("memory_mb", "").startswith("rlimit") else None,
        nice=nice_for(limits.cpu_weight) if mechanisms.get("cpu_weight", "").startswith("nice") else 0,
    )


def choose_mechanisms(tree: CgroupTree, *, tmpfs: bool, root: bool) -> dict[str, str]:
    """How each limit is enforced here, as ``status`` shows it (``none: why`` where it is not)."""
    pids = tree.mechanism("pids") or (
        f"none: {tree.problems.get('pids')}; RLIMIT_NPROC does not bind root"
        if root
        else "rlimit: RLIMIT_NPROC per jail"
    )
    return {
        "pids": pids,
        "memory_mb": tree.mechanism("memory") or "rlimit: RLIMIT_DATA per process",
        "cpu_weight": _cpu_mechanism(tree),
        "tmp_mb": (
            "tmpfs: one for every session's /tmp, each one's share counted in its memory_mb"
            if tmpfs
            else "none: mounting a tmpfs needs CAP_SYS_ADMIN; /tmp is on the host's disk"
        ),
        "shm_mb": "tmpfs",
    }


def _cpu_mechanism(tree: CgroupTree) -> str:
    mechanism = tree.mechanism("cpu")
    if mechanism is None:
        return "nice: per jail, weights below 100 only"
    if tree.tools_cpu_weight is None:
        return mechanism
    return f"{mechanism}; every session's processes together at {tree.tools_cpu_weight} against the daemon's 100"


def limits_reached(limits: SandboxLimits, cgroup: SessionCgroup | None, tmp_dir: str) -> list[str]:
    """What the model is told when a command failed at one of its session's limits (blocking: reads the
    kernel's counts and the size of ``/tmp``); empty when none was reached since the last look."""
    reached = []
    events = cgroup.new_events() if cgroup is not None else {}
    if "pids" in events:
        reached.append(
            f"the session's process limit ({limits.pids}) was reached: a process or thread could not be started"
        )
    if "memory" in events:
        reached.append(f"the session's memory limit ({limits.memory_mb} MB) was reached: a process was killed")
    if os.statvfs(tmp_dir).f_bavail == 0:
        reached.append(f"the file system of /tmp is full (every session's /tmp shares {limits.tmp_mb} MB)")
    return reached


@attrs.frozen
class SettleFds:
    """The descriptors of one jail's start: bubblewrap's info pipe and block pipe (our ends)."""

    info_read: int
    block_write: int


async def _child_pid(info_read: int) -> int:
    """The jail's init, from bubblewrap's ``--info-fd`` report (a JSON object)."""
    text = b""
    with trio.move_on_after(_INFO_SECONDS):
        while not text.rstrip().endswith(b"}"):
            await trio.lowlevel.wait_readable(info_read)
            chunk = os.read(info_read, 4096)
            if not chunk:
                raise LimitsNotApplied("bubblewrap exited before it made the jail")
            text += chunk
        return int(json.loads(text)["child-pid"])
    raise LimitsNotApplied(f"bubblewrap did not report its jail within {_INFO_SECONDS:g}s")


def _apply(monitor: int, child: int, cgroup: SessionCgroup | None, fallbacks: Fallbacks) -> None:
    """Put the jail's processes in the session's groups and set the fallbacks' limits (blocking)."""
    if cgroup is not None:
        cgroup.place(monitor, child)
    if fallbacks.nproc is not None:
        resource.prlimit(child, resource.RLIMIT_NPROC, (fallbacks.nproc, fallbacks.nproc))
    if fallbacks.data_bytes is not None:
        resource.prlimit(child, resource.RLIMIT_DATA, (fallbacks.data_bytes, fallbacks.data_bytes))
    if fallbacks.nice:
        os.setpriority(os.PRIO_PROCESS, child, fallbacks.nice)


async def settle(monitor: int, fds: SettleFds, cgroup: SessionCgroup | None, fallbacks: Fallbacks) -> None:
    """Put a just-started jail, blocked before its command, under its limits, then let the command run.

    The wait for bubblewrap's report is Trio's, not a spawn thread's: under load a jail can take tens of
    milliseconds to report, and a spawn thread held meanwhile made every other session's command queue
    (200 busy sessions ran 30 % fewer turns a second). Closes both descriptors of ``fds``.

    Args:
        monitor: The outer bwrap's pid.
        fds: Our ends of its info and block pipes.
        cgroup: The session's groups, None for none.
        fallbacks: The resource limits to set.

    Raises:
        LimitsNotApplied: the jail could not be placed or limited; it was killed first, never let go.
    """
    child: int | None = None
    try:
        os.set_blocking(fds.info_read, False)
        child = await _child_pid(fds.info_read)
        await trio.to_thread.run_sync(_apply, monitor, child, cgroup, fallbacks)
    except BaseException as exc:
        # Killed before the block descriptor closes: an end of file there would let the command run.
        for pid in (child, monitor):
            if pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        os.close(fds.block_write)
        if isinstance(exc, (OSError, ValueError, KeyError)):
            raise LimitsNotApplied(f"the session's limits could not be applied to a new process: {exc}") from exc
        raise
    finally:
        os.close(fds.info_read)
    os.write(fds.block_write, b"1")
    os.close(fds.block_write)
