"""The launcher: the one parent of every process a tool starts, jailed by its session's policy.

One per daemon::

    async with open_launcher(config.sandbox) as launcher:   # spawn threads, preflight
        process = await launcher.spawn(["bash", "-c", "make"], policy=policy, cwd=cwd, env=env)
        ...
        await process.stop(grace=2.0)

A jailed policy runs the process under bubblewrap (see :mod:`tools.jail._mounts`); ``full-access``
runs it directly as the leader of its own process group (the old behaviour). Where no jail can run,
a jailed policy's spawn raises :class:`JailUnavailable`: nothing ever runs unjailed by accident.
"""

from __future__ import annotations

import errno
import functools
import logging
import os
import shutil
import subprocess
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import attrs
import trio

from config.sandbox import SandboxConfig, SandboxLimits
from tools.errors import ToolError
from tools.jail._mounts import inside, jail_argv, jail_env, open_argv
from tools.jail._reaper import Reaper
from tools.jail._spawner import LauncherClosed, Spawner
from tools.jail._tmpfs import can_mount_tmpfs
from tools.jail.cgroups import CgroupTree, SessionCgroup, find_cgroups
from tools.jail.limits import Fallbacks, LimitsNotApplied, SettleFds, choose_mechanisms, fallbacks_for, settle
from tools.jail.policy import JailPolicy
from tools.jail._seccomp import filter_program, program_pipe
from tools.jail.preflight import FULL_ACCESS_HINT, JailStatus, preflight
from tools.jail.process import JailedProcess

if TYPE_CHECKING:
    from tools.jail.resident import ResidentShell

__all__ = [
    "JailUnavailable", "Launcher", "LauncherClosed", "LimitsNotApplied", "PopenFn", "open_launcher", "start_process",
]  # fmt: skip

log = logging.getLogger(__name__)

#: Forks that may be under way at once (see :mod:`tools.jail._spawner`).
SPAWN_THREADS = 4
# Removing the daemon's control groups at shutdown kills stragglers first: a bound for a stuck one.
_CGROUP_REMOVAL_SECONDS = 10.0


class JailUnavailable(ToolError, RuntimeError):
    """A jailed session asked for a process where no jail can run; the message names ``sandbox.mode``."""


_NOT_CHECKED = JailStatus(
    available=False, error="the preflight has not run", failed_step="preflight",
    advice="open the launcher with open_launcher(), which runs it",
)  # fmt: skip


def _close_all(*fds: int | None) -> None:
    for fd in fds:
        if fd is not None:
            os.close(fd)


class Launcher:
    """One per daemon: the parent of every jailed process.

    Args:
        config: The ``sandbox`` section (``bwrap`` says which bubblewrap to use).

    Attributes:
        status: What the preflight found; "not checked" until :meth:`preflight` has run.
    """

    def __init__(self, config: SandboxConfig) -> None:
        self._config = config
        self._spawner = Spawner(threads=SPAWN_THREADS)
        self._spawner_started = False
        self._cgroups = CgroupTree({}, {}, {})
        # Every session's resident shell that ever started a jail: ended before the launcher closes.
        self._residents: weakref.WeakSet[ResidentShell] = weakref.WeakSet()
        self._reaper = Reaper()
        self.status: JailStatus = _NOT_CHECKED

    async def preflight(self) -> JailStatus:
        """Run the real jail once (``bwrap ... -- true`` with every option), find how each of the sessions'
        limits can be enforced here, and keep the result in :attr:`status`."""
        status = await preflight(self._config.bwrap)
        if not status.available:
            log.error("no jail can run: %s failed: %s; %s", status.failed_step, status.error, status.advice)
        else:
            self._cgroups, tmpfs = await trio.to_thread.run_sync(
                lambda: (find_cgroups(self._config.tools_cpu_weight), can_mount_tmpfs())
            )
            limits = choose_mechanisms(self._cgroups, tmpfs=tmpfs, root=os.geteuid() == 0)
            status = attrs.evolve(status, limits=limits)
            for name, mechanism in limits.items():
                if mechanism.startswith("none"):
                    log.warning("sandbox.limits.%s is not enforced here (%s)", name, mechanism[len("none: "):])
            if not status.mounts_proc:
                log.warning("the jail cannot mount its own /proc here; jailed processes see an empty /proc")
            if status.seccomp_error is not None:
                log.warning("jails run without their system-call filter: %s", status.seccomp_error)
        self.status = status
        return status

    def open_limits(self, session_id: str, limits: SandboxLimits) -> SessionCgroup | None:
        """A session's control groups with ``limits`` written, None where the daemon has none (blocking:
        call it in a worker thread, with the rest of a session's opening).

        Raises:
            OSError: the groups could not be made.
        """
        return self._cgroups.open_session(session_id, limits)

    def keep_resident(self, shell: ResidentShell, process: JailedProcess) -> None:
        """Remember a session's resident shell, to end its jail when the launcher closes (:meth:`aclose`), and
        reap ``process``, its jail, as soon as it ends by itself (its idle time).

        Raises:
            OSError: ``process`` cannot be watched (no pidfd).
        """
        self._residents.add(shell)
        self._reaper.watch(process.pid, process.reap)

    async def aclose(self) -> None:
        """End the sessions' resident shells, close, and remove the daemon's control groups (the sessions'
        are gone by now)."""
        for shell in list(self._residents):
            await shell.aclose()
        self.close()
        with trio.move_on_after(_CGROUP_REMOVAL_SECONDS, shield=True):
            await trio.to_thread.run_sync(self._cgroups.close)

    def start(self) -> None:
        """Start the spawn threads (done by :func:`open_launcher`, or by the first spawn)."""
        if not self._spawner_started:
            self._spawner_started = True
            self._spawner.start()
            self._reaper.start()

    def close(self) -> None:
        """Stop the spawn threads; every jail they started dies with them (``--die-with-parent``)."""
        self._spawner.close()
        self._reaper.close()

    async def spawn(
        self,
        argv: Sequence[str],
        *,
        policy: JailPolicy,
        cwd: str,
        env: Mapping[str, str],
        stdin: bool = False,
        merge_stderr: bool = False,
        binds: Sequence[str] = (),
        pass_fds: Sequence[int] = (),
        as_init: bool = False,
    ) -> JailedProcess:
        """Start ``argv`` under ``policy``; returns once it runs.

        Args:
            argv: The command.
            policy: The session's policy; ``full-access`` runs it with the daemon's view and privileges, in
                its own PID namespace (unjailed in its own process group where bubblewrap cannot run).
            cwd: The working directory as the process sees it (``/tmp/...`` is the session's tmp).
            env: Its whole environment (see :mod:`tools.jail.environment`); nothing is inherited.
            stdin: Give it a pipe on stdin (``process.stdin``); /dev/null otherwise.
            merge_stderr: Its stderr goes into the stdout pipe, as a terminal shows them.
            binds: More host directories bound read-write at their own paths (execute_code's workspace).
            pass_fds: Our descriptors it inherits at the same numbers (the terminal's state pipe).
            as_init: It is the jail's init itself (a jailed policy only; see :func:`~tools.jail._mounts.jail_argv`).

        Raises:
            JailUnavailable: the policy is jailed and no jail can run here.
            LimitsNotApplied: the jail could not be put under the session's limits (it never ran).
            PathRefused: ``cwd`` is hidden by the policy.
            LauncherClosed: the launcher is closed.
            OSError: the program or ``cwd`` does not exist, or cannot be executed.
        """
        self.start()
        status = self.status
        if not status.available or status.bwrap is None:
            if not policy.jailed:
                # No bubblewrap here: a full-access process runs as before, in its own process group.
                return await start_process(
                    self._spawner.popen, list(argv), env, jailed=False, stdin=stdin, merge_stderr=merge_stderr,
                    cwd=cwd, pass_fds=pass_fds,
                )  # fmt: skip
            raise JailUnavailable(
                f"No jail can run here, so this {policy.mode.value} session cannot start processes "
                f"({status.failed_step} failed: {status.error}). {status.advice}"
                + ("" if status.advice and "sandbox.mode" in status.advice else f"; {FULL_ACCESS_HINT}")
            )
        # Only a jail is held at bwrap's block descriptor while it is put under its limits: a root
        # daemon's full-access process has no user namespace, and bwrap, privileged, sets its init's
        # parent-death signal only after that wait, so a daemon dying then would leave the init behind.
        fallbacks = fallbacks_for(policy.limits, status.limits) if policy.jailed else Fallbacks()
        program = filter_program() if status.seccomp and policy.jailed else None
        settles = policy.jailed and (policy.cgroup is not None or fallbacks.needed)
        with _JailFds(program, settles) as fds:
            # The paths it mounts are looked at on disk: on the spawn thread, just before the fork.
            rewrite = functools.partial(
                _jailed_command, status, policy, cwd=cwd, binds=tuple(binds), fds=fds, as_init=as_init
            )
            process = await start_process(
                functools.partial(self._spawner.popen, rewrite=rewrite), list(argv), env, jailed=True, stdin=stdin,
                merge_stderr=merge_stderr, cwd="/", pass_fds=(*pass_fds, *fds.child_ends),
            )  # fmt: skip
            if fds.settle is None:
                return process
            try:
                await settle(process.pid, fds.hand_over(), policy.cgroup, fallbacks)
            except BaseException:
                with trio.CancelScope(shield=True):
                    await process.stop(0)
                process.close_pipes()
                raise
            return process


class _JailFds:
    """The descriptors one jail's start passes bubblewrap: the filter program, the info and block pipes.

    The child's ends are closed once the process started (``with``); our ends of the info and block pipes
    are handed to :func:`~tools.jail.limits.settle`, which closes them, or closed here when it never runs.
    """

    def __init__(self, program: bytes | None, settles: bool) -> None:
        self.seccomp: int | None = None
        self.info: tuple[int, int] | None = None
        self.block: tuple[int, int] | None = None
        self._handed = False
        try:
            if program is not None:
                self.seccomp = program_pipe(program)
            if settles:
                self.info, self.block = os.pipe(), os.pipe()
        except BaseException:
            self.__exit__()
            raise

    @property
    def settle(self) -> SettleFds | None:
        """Our ends, where the jail is settled."""
        if self.info is None or self.block is None:
            return None
        return SettleFds(info_read=self.info[0], block_write=self.block[1])

    def hand_over(self) -> SettleFds:
        """Our ends, now :func:`settle`'s to close."""
        assert self.settle is not None
        self._handed = True
        return self.settle

    @property
    def info_fd(self) -> int | None:
        """bubblewrap's end of the info pipe."""
        return None if self.info is None else self.info[1]

    @property
    def block_fd(self) -> int | None:
        """bubblewrap's end of the block pipe."""
        return None if self.block is None else self.block[0]

    @property
    def child_ends(self) -> tuple[int, ...]:
        """The descriptors bubblewrap inherits."""
        return tuple(fd for fd in (self.seccomp, self.info_fd, self.block_fd) if fd is not None)

    def __enter__(self) -> _JailFds:
        return self

    def __exit__(self, *_: object) -> None:
        mine = [] if self._handed or self.settle is None else [self.settle.info_read, self.settle.block_write]
        _close_all(*self.child_ends, *mine)


def _jailed_command(
    status: JailStatus,
    policy: JailPolicy,
    argv: list[str],
    env: Mapping[str, str],
    *,
    cwd: str,
    binds: tuple[str, ...],
    fds: _JailFds,
    as_init: bool = False,
) -> tuple[list[str], dict[str, str]]:
    """The bwrap command line and environment that run ``argv`` under ``policy`` (blocking: it stats; a
    :data:`~tools.jail._spawner.Rewrite` once the rest is bound).

    A ``full-access`` policy gets the open jail (:func:`~tools.jail._mounts.open_argv`): its own PID
    namespace and nothing of the daemon's in sight, the file system otherwise as it is.

    Raises:
        PathRefused: ``cwd`` is hidden by the policy.
        FileNotFoundError: ``cwd`` or the program does not exist.
    """
    assert status.bwrap is not None
    # A bind is seen at its own path, even under /tmp; anything else as the policy maps it.
    host_cwd = cwd if inside(cwd, binds) or not policy.jailed else policy.check_cwd(cwd)
    if not os.path.isdir(host_cwd):
        raise FileNotFoundError(errno.ENOENT, "No such directory", cwd)
    # As Popen would (bwrap's own exec failure is only an exit status 1): the jail sees the
    # host's file system, so the host's answer holds.
    if shutil.which(argv[0], path=env.get("PATH", os.defpath)) is None:
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", argv[0])
    if not policy.jailed:
        mounts = open_argv(
            status.bwrap, cwd=cwd, hidden=policy.daemon_paths(), exposed=policy.exposed, binds=binds,
            mounts_proc=status.mounts_proc, info_fd=fds.info_fd, block_fd=fds.block_fd,
        )  # fmt: skip
        return [*mounts, *argv], dict(env)
    jailed_env, hide = jail_env(env, policy)
    mounts = jail_argv(
        status.bwrap, policy, cwd=cwd, binds=binds, mounts_proc=status.mounts_proc, hide=hide, seccomp_fd=fds.seccomp,
        info_fd=fds.info_fd, block_fd=fds.block_fd, as_init=as_init,
    )  # fmt: skip
    return [*mounts, *argv], jailed_env


PopenFn = Callable[..., Awaitable["subprocess.Popen[bytes]"]]
"""Runs ``subprocess.Popen(argv, **options)`` somewhere and returns it (a spawn thread, a worker thread)."""


async def start_process(
    popen: PopenFn,
    argv: list[str],
    env: Mapping[str, str],
    *,
    jailed: bool,
    stdin: bool,
    merge_stderr: bool,
    cwd: str,
    pass_fds: Sequence[int] = (),
) -> JailedProcess:
    """Start ``argv`` with pipes we own, through ``popen``; the one way every tool process starts.

    A caller cancelled while the fork was under way gets ``Cancelled`` only once the new process is
    stopped again: nothing leaks.
    """
    out_r, out_w = os.pipe()
    err_r, err_w = (None, None) if merge_stderr else os.pipe()
    in_r, in_w = os.pipe() if stdin else (None, None)
    try:
        process = await popen(
            argv,
            stdin=subprocess.DEVNULL if in_r is None else in_r,
            stdout=out_w,
            stderr=out_w if err_w is None else err_w,
            cwd=cwd,
            env=dict(env),
            close_fds=True,
            pass_fds=tuple(pass_fds),
            # A jail leads its own session through bwrap's --new-session.
            start_new_session=not jailed,
        )
    except BaseException:
        _close_all(out_r, err_r, in_w)
        raise
    finally:
        _close_all(out_w, err_w, in_r)
    started = JailedProcess(
        process,
        jailed=jailed,
        stdin=None if in_w is None else trio.lowlevel.FdStream(in_w),
        stdout=trio.lowlevel.FdStream(out_r),
        stderr=None if err_r is None else trio.lowlevel.FdStream(err_r),
    )
    try:
        await trio.lowlevel.checkpoint_if_cancelled()
    except BaseException:
        # Cancelled while the fork was under way: the new process must not outlive the caller.
        await started.stop(0)
        started.close_pipes()
        raise
    return started


@asynccontextmanager
async def open_launcher(config: SandboxConfig) -> AsyncIterator[Launcher]:
    """A started launcher whose preflight has run; closed on exit (its jails die with it)."""
    launcher = Launcher(config)
    launcher.start()
    try:
        await launcher.preflight()
        yield launcher
    finally:
        await launcher.aclose()
