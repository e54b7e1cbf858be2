"""A process started by the launcher, and the one way to stop it with everything it started.

A jailed process is an outer ``bwrap`` whose child is the init (pid 1) of the jail's own PID
namespace; the command runs under that init. Stopping it gracefully: SIGTERM every process of the
namespace but its init (``setsid`` grandchildren included: a session does not leave a namespace),
wait the grace for the outer bwrap to exit (it does when the command exits, and the kernel then kills
whatever is left in the namespace), then SIGKILL the init and the outer bwrap. A SIGTERM to the outer
bwrap would tear the namespace down at once, without a grace, hence the walk.

A full-access process leads its own session and process group; it is stopped with ``killpg``.
"""

from __future__ import annotations

import logging
import os
import resource
import signal
import subprocess
import time

import trio

__all__ = ["JailedProcess", "jail_init", "jail_members", "kill_jails_under"]

log = logging.getLogger(__name__)

# How long the memory limit waits for a jailed command to appear (bwrap sets its mounts up first).
_COMMAND_APPEARS_SECONDS = 2.0
_COMMAND_POLL_SECONDS = 0.001
# A bound on the kernel's teardown of a killed jail's namespace (it takes milliseconds).
_NAMESPACE_EXIT_SECONDS = 5.0


def _pid_namespace(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def jail_init(outer: int) -> int | None:
    """The init of the jail an outer bwrap started: its only child (host pid; it reads /proc)."""
    try:
        with open(f"/proc/{outer}/task/{outer}/children") as handle:
            children = handle.read().split()
    except OSError:
        return None
    return int(children[0]) if children else None


def jail_members(outer: int) -> tuple[int | None, list[int]]:
    """The jail's init and the other processes of its PID namespace (host pids).

    Blocking (it walks /proc): call it through ``trio.to_thread.run_sync``.
    """
    init = jail_init(outer)
    if init is None:
        return None, []
    namespace = _pid_namespace(init)
    if namespace is None or namespace == _pid_namespace(outer):
        return None, []
    with os.scandir("/proc") as entries:
        pids = [int(entry.name) for entry in entries if entry.name.isdigit()]
    members = [pid for pid in pids if pid != init and _pid_namespace(pid) == namespace]
    return init, members


def _signal_pid(pid: int, namespace: str | None, signum: int) -> bool:
    """Signal ``pid`` if it is (still) in ``namespace``: the pidfd pins the process while we check."""
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        return False
    try:
        if namespace is not None and _pid_namespace(pid) != namespace:
            return False
        signal.pidfd_send_signal(pidfd, signum)
        return True
    except OSError:
        return False
    finally:
        os.close(pidfd)


def _signal_jail(outer: int, signum: int) -> int:
    """Send ``signum`` to the processes of the jail but its init; returns how many got it.

    Blocking (it walks /proc): call it through ``trio.to_thread.run_sync``.
    """
    init, members = jail_members(outer)
    if init is None:
        return 0
    namespace = _pid_namespace(init)
    return sum(_signal_pid(pid, namespace, signum) for pid in members)


def _kill_jail(outer: int) -> int | None:
    """SIGKILL the jail's init (the kernel then kills its whole namespace); a pidfd of the init, to wait on.

    ``outer`` (our unreaped child: its pid cannot be reused) is stopped first and killed by the caller: a
    bwrap still starting may fork its init at any moment, and an init forked after the look for it, its
    parent then killed before it armed ``--die-with-parent``, ran its command on, out of our sight (seen
    under load, about once in a hundred cancelled starts). Stopped, bwrap forks nothing more.

    Blocking (it reads /proc): call it through ``trio.to_thread.run_sync``.
    """
    try:
        os.kill(outer, signal.SIGSTOP)
        # The signal is only sent: a fork under way on another core still completes. Once bwrap is seen
        # stopped (or gone), its children are all there are. WNOWAIT: whoever waits for it still reaps it.
        os.waitid(os.P_PID, outer, os.WSTOPPED | os.WEXITED | os.WNOWAIT)
    except (ProcessLookupError, ChildProcessError):
        return None
    init = jail_init(outer)
    if init is None:
        return None
    try:
        pidfd = os.pidfd_open(init)
    except OSError:
        return None
    # Killed as well when bwrap had not made the namespace yet: a child of bwrap either way.
    try:
        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    except OSError:
        pass
    return pidfd


def kill_jails_under(directory: str) -> list[int]:
    """SIGKILL every ``bwrap`` of ours whose command line names a path under ``directory``; their pids.

    An earlier daemon of the same home that died in the instant between starting a bwrap and bwrap
    arming ``--die-with-parent`` leaves that jail running; every jail binds its session's directory
    under the runtime directory, so its outer bwrap and its init (a fork of it) both name it.
    Killing the init ends its whole namespace. Blocking (it walks /proc).
    """
    prefix = os.fsencode(directory.rstrip("/") + "/")
    uid, killed = os.getuid(), []
    with os.scandir("/proc") as entries:
        pids = [int(entry.name) for entry in entries if entry.name.isdigit()]
    for pid in pids:
        try:
            if os.stat(f"/proc/{pid}").st_uid != uid:
                continue
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                argv = handle.read().split(b"\0")
        except OSError:
            continue
        if os.path.basename(argv[0]) == b"bwrap" and any(arg.startswith(prefix) for arg in argv[1:]):
            if _signal_pid(pid, None, signal.SIGKILL):
                killed.append(pid)
    return killed


def _prlimit(pids: list[int], limit: int) -> bool:
    done = False
    for pid in pids:
        try:
            resource.prlimit(pid, resource.RLIMIT_AS, (limit, limit))
            done = True
        except (ProcessLookupError, PermissionError):
            continue
    return done


def _limit_jail(outer: int, limit: int) -> bool:
    """Cap the address space of the jail's command once it appears (and of bwrap, whose forks inherit it).

    Blocking (it polls /proc while bwrap sets the jail up): call it through ``trio.to_thread.run_sync``.
    """
    _prlimit([outer], limit)
    deadline = time.monotonic() + _COMMAND_APPEARS_SECONDS
    while time.monotonic() < deadline:
        init, members = jail_members(outer)
        if members:
            return _prlimit([init, *members] if init is not None else members, limit)
        time.sleep(_COMMAND_POLL_SECONDS)
    return False


def _signal_group(pgid: int, signum: int) -> bool:
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        # Gone, or the id was recycled by a group that is not ours: nothing of ours is left.
        return False
    return True


class JailedProcess:
    """A running tool process: its pipes, its exit, and :meth:`stop`.

    Attributes:
        pid: The outer bwrap's pid (jailed) or the process group leader's (full-access).
        jailed: Whether it runs in a jail.
        stdin: Our end of its stdin, when asked for; None otherwise (it reads /dev/null).
        stdout: Our end of its stdout (and stderr when merged).
        stderr: Our end of its stderr, None when merged into stdout.
    """

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        *,
        jailed: bool,
        stdin: trio.lowlevel.FdStream | None,
        stdout: trio.lowlevel.FdStream,
        stderr: trio.lowlevel.FdStream | None,
    ) -> None:
        self._popen = popen
        self.pid = popen.pid
        self.jailed = jailed
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr
        # Not reaped yet, so the pid cannot have been reused: the pidfd is this process.
        self._pidfd: int | None = os.pidfd_open(popen.pid)
        self._wait_lock = trio.Lock()

    @property
    def returncode(self) -> int | None:
        """The exit status once reaped (negative: killed by that signal), else None."""
        return self._popen.returncode

    def reap(self) -> None:
        """Reap it (blocking until it exits; from any thread: :class:`~tools.jail._reaper.Reaper` does it for a
        resident jail that ends while no task waits for it). :meth:`wait` still answers."""
        self._popen.wait()

    async def wait(self) -> int:
        """Wait for the process to exit, reap it, and return its exit status."""
        async with self._wait_lock:
            if self._pidfd is not None:
                await trio.lowlevel.wait_readable(self._pidfd)
                # The pidfd is readable: it has exited, so this wait does not block.
                self._popen.wait()
                os.close(self._pidfd)
                self._pidfd = None
        returncode = self._popen.returncode
        assert returncode is not None
        return returncode

    async def stop(self, grace: float) -> bool:
        """Stop the process and everything it started: SIGTERM, then SIGKILL after ``grace`` seconds.

        Shielded, so it completes when called from a cancelled scope; returns once nothing of it runs
        (reaped). Even after the command exited by itself, a full-access group member it left behind
        is stopped; a jail's members die with it.

        Returns:
            True when something of it was still running.
        """
        with trio.CancelScope(shield=True):
            present = await (self._stop_jail(grace) if self.jailed else self._stop_group(grace))
            await self.wait()
        return present

    async def limit_memory(self, limit_mb: int) -> bool:
        """Cap the address space of the command (the seeds' ``prlimit`` after spawn).

        A ``preexec_fn`` would do it before exec but is unsafe in a threaded process, so the command
        runs a few milliseconds unlimited. Returns False (and logs) where that cannot be done.
        """
        limit = limit_mb * 1024 * 1024
        if not hasattr(resource, "prlimit"):
            log.warning("memory_limit_mb is set but this platform has no prlimit; process %d runs unlimited", self.pid)
            return False
        if self.jailed:
            return await trio.to_thread.run_sync(_limit_jail, self.pid, limit)
        return _prlimit([self.pid], limit)

    def close_pipes(self) -> None:
        """Close our ends of its pipes (idempotent)."""
        for stream in (self.stdin, self.stdout, self.stderr):
            if stream is not None:
                stream.close()

    async def _stop_group(self, grace: float) -> bool:
        present = _signal_group(self.pid, signal.SIGTERM)
        if present:
            with trio.move_on_after(grace):
                await self.wait()
            # Also when the leader exited in time: a member that ignores SIGTERM must not survive it.
            _signal_group(self.pid, signal.SIGKILL)
        return present

    async def _stop_jail(self, grace: float) -> bool:
        if self.returncode is not None:
            return False  # the outer bwrap has exited: the namespace went with it
        signalled = await trio.to_thread.run_sync(_signal_jail, self.pid, signal.SIGTERM)
        if signalled:
            with trio.move_on_after(grace):
                await self.wait()
        if self.returncode is None:
            init = await trio.to_thread.run_sync(_kill_jail, self.pid)
            self._popen.kill()
            if init is not None:
                # The init exits only once the kernel has killed every process of its namespace.
                try:
                    with trio.move_on_after(_NAMESPACE_EXIT_SECONDS):
                        await trio.lowlevel.wait_readable(init)
                finally:
                    trio.lowlevel.notify_closing(init)
                    os.close(init)
        return True
