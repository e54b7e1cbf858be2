"""A session's resident jailed shell: its foreground terminal commands without a new jail each.

A jail per command cost the machine about 7.4 ms of CPU with the launcher's share (bwrap, its init, the
mounts, the placement in the session's groups); a command spawned in a jail that is already running costs
2.5 ms, most of it bash's own start (``bench/bench_jail_cpu.py``). So each session keeps one jail, started on its
first foreground command through the launcher's usual path (the session's policy, mounts, system-call
filter, control groups and fallback limits, ``--die-with-parent``), whose PID namespace's init is a small
helper of ours, in Perl (``bwrap --as-pid-1``; ``_resident_init.pl`` beside this module says why it stays a wall). The
daemon sends it each command over a SOCK_SEQPACKET socket pair, with the command's output pipe and the
shell's state pipe attached; it forks the command, and once that exits it kills and reaps everything else
in the namespace, empties ``/dev/shm`` and removes System V IPC objects before it reports the exit, so a
command leaves nothing behind,
as when its jail ended with it. Because that sweep would hit the host's processes, ``/dev/shm`` and IPC
objects were the init ever started outside a jail of its own, the daemon's first request names the daemon's
own namespaces that the jail unshares, and the init refuses to run if one is its own too (or it cannot
tell: a jail whose kernel refused it a ``/proc``); the session's commands then get a jail each, said once in
the log. Its init is Perl, which starts in 1.4 ms of CPU where ``python -S -I`` took 6.4: a session is
ahead from its second command on. Where no Perl runs, or on a machine other than x86_64 or aarch64 (the init
makes system calls by number), each command gets a jail of its own.

What changes against a jail per command: POSIX message queues persist between one session's commands (no
file system of theirs is mounted in a jail, so they cannot be listed to be removed; its ``/tmp`` always
persisted); the helper (a small Perl process) counts in the session's memory and process limits while it
lives.

One command at a time: a session's second command while its first runs (parallel tool calls, a subagent
sharing the runtime) gets a jail of its own, as before. A policy change (mode, workspace, mounts, the paths
an environment hides) retires the resident and starts a new one; one that died (killed, out of memory) is
replaced at the next command, with a log line. It ends with its session (:meth:`ResidentShell.aclose`,
before the session's control groups go), with the launcher, and by itself after ``idle_seconds`` without a
command (the helper times out; the launcher's reaper thread reaps its bwrap: no task of ours waits for it).
"""

from __future__ import annotations

import errno
import functools
import logging
import os
import shutil
import signal
import socket
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from tools.jail._mounts import jail_env
from tools.jail.policy import JailPolicy
from tools.jail.process import JailedProcess, jail_init

if TYPE_CHECKING:
    from tools.jail.launcher import Launcher

__all__ = [
    "STATE_FD_MIN", "ResidentProcess", "ResidentRefused", "ResidentShell", "ResidentShellLost", "namespaces_request",
]  # fmt: skip

log = logging.getLogger(__name__)

STATE_FD_MIN = 64
"""The lowest descriptor number a command's state pipe may ask for: the helper's own all lie below it."""

_SOURCE = Path(__file__).with_name("_resident_init.pl").read_text(encoding="utf-8")
# The machines whose system-call numbers the init knows.
_MACHINES = frozenset({"x86_64", "aarch64"})
_SYSTEM_PERL = "/usr/bin/perl"
_MAX_ANSWER = 4096
# Bounds on the helper's answers: it forks at once, and a sweep after SIGKILL takes milliseconds.
_ANSWER_SECONDS = 10.0
_SWEEP_SECONDS = 5.0
# The namespaces every jail has of its own (tools.jail._mounts.NO_PRIVILEGE; the cgroup one only where it can):
# written out, not derived from bwrap's options, so the init's check still holds should those lose one.
_UNSHARED = ("pid", "mnt", "ipc", "uts", "user")


class ResidentShellLost(OSError):
    """The resident shell ended or stopped answering while it started a command (the command did not run,
    or was killed with it)."""


class ResidentRefused(PermissionError):
    """The resident's init refused to run: it would share a namespace with the daemon (so its sweep would reach
    the daemon's host), or could not tell. Every later command of the session gets a jail of its own."""


class _Resident:
    """One running resident jail: its outer bwrap, our end of the control socket, and what it was made for."""

    def __init__(self, process: JailedProcess, control: socket.socket, key: tuple[Any, ...]) -> None:
        self.process = process
        self.control = control
        self.key = key
        # Its init ends after the last command (see _resident_init.pl's "retire"): the next gets a new jail.
        self.retiring = False

    def send(self, request: bytes, fds: Sequence[int] = ()) -> None:
        """Send one request (its fields separated by NUL bytes: see ``_resident_init.pl``); the socket buffer
        is empty between requests: it does not block.

        Raises:
            OSError: EMSGSIZE for a request larger than the socket takes, or the helper is gone.
        """
        socket.send_fds(self.control, [request], list(fds))

    async def receive(self) -> list[str] | None:
        """The helper's next answer, as its words; None once it is gone."""
        while True:
            try:
                data = self.control.recv(_MAX_ANSWER)
            except BlockingIOError:
                await trio.lowlevel.wait_readable(self.control)
                continue
            except ConnectionResetError:
                continue  # it ended with a request of ours unread: said once, before what it sent before it ended
            except OSError:
                return None
            if not data:
                return None
            return data.decode("ascii", "replace").split()

    def state(self) -> str:
        """``alive``, ``idle`` (it timed out and exits), ``refused`` (its init refused to run: its answer waits)
        or ``dead``, looking without waiting."""
        for _ in range(2):  # ECONNRESET, as in receive(), comes once
            try:
                data = self.control.recv(_MAX_ANSWER, socket.MSG_PEEK | socket.MSG_DONTWAIT)
            except BlockingIOError:
                return "alive"
            except ConnectionResetError:
                continue
            except OSError:
                return "dead"
            return "idle" if data == b"idle" else "refused" if data.startswith(b"refused ") else "dead"
        return "dead"

    async def aclose(self) -> None:
        """End it (its whole namespace) and reap it; shielded.

        The closed socket tells its init to exit, which ends the namespace, and bwrap reaps it and exits: so
        nothing is left, not even a process waiting to be reaped. One that does not is killed.
        """
        with trio.CancelScope(shield=True):
            trio.lowlevel.notify_closing(self.control)
            self.control.close()
            with trio.move_on_after(_SWEEP_SECONDS):
                await self.process.wait()
            await self.process.stop(0)
            self.process.close_pipes()


class ResidentProcess:
    """A command run by a resident shell: what :class:`~tools.terminal.ForegroundRun` uses of a
    :class:`~tools.jail.process.JailedProcess` (``pid``, ``stdout``, ``wait``, ``returncode``, ``stop``,
    ``close_pipes``).

    Attributes:
        pid: The host pid of the resident jail's outer bwrap (the command's own is the namespace's).
        stdout: Our end of its output (stderr merged).
    """

    jailed = True

    def __init__(self, shell: ResidentShell, resident: _Resident, stdout: trio.lowlevel.FdStream) -> None:
        self._shell = shell
        self._resident = resident
        self.pid = resident.process.pid
        self.stdout = stdout
        self._returncode: int | None = None
        self._left = False
        self._lock = trio.Lock()

    @property
    def returncode(self) -> int | None:
        """The exit status once it exited and the namespace was swept (negative: killed by that signal)."""
        return self._returncode

    async def wait(self) -> int:
        """Wait for the command to exit and everything else in the jail to be gone; its exit status."""
        async with self._lock:
            while self._returncode is None:
                answer = await self._resident.receive()
                if answer is None:
                    # The jail ended under the command (killed, out of memory): so did the command.
                    self._returncode = -signal.SIGKILL
                    await self._shell.lost(self._resident)
                elif answer[0] == "exit":
                    returncode, left, retire = (int(word) for word in answer[1:4])
                    self._left, self._resident.retiring = bool(left), bool(retire)
                    self._returncode = returncode
                    self._shell.release(self._resident)
        return self._returncode

    async def stop(self, grace: float) -> bool:
        """Stop the command and everything it started, as :meth:`JailedProcess.stop` does: SIGTERM to every
        process of the jail but its init, SIGKILL after ``grace`` seconds. Shielded.

        Returns:
            True when something of it was still running (the command, or what it left when it exited).
        """
        with trio.CancelScope(shield=True):
            if self._returncode is not None:
                return self._left
            for signum, patience in ((signal.SIGTERM, grace), (signal.SIGKILL, _SWEEP_SECONDS)):
                try:
                    self._resident.send(b"signal\0%d" % signum)
                except OSError:
                    break  # gone: wait() sees it
                with trio.move_on_after(patience):
                    await self.wait()
                if self._returncode is not None:
                    return True
            if self._returncode is None:
                # It does not answer: the whole jail goes, and the next command gets a new one.
                await self._shell.lost(self._resident)
                self._returncode = -signal.SIGKILL
        return True

    def close_pipes(self) -> None:
        """Close our end of its output (idempotent)."""
        self.stdout.close()


class ResidentShell:
    """One session's resident jail for foreground commands; its first command starts it.

    Args:
        launcher: The daemon's launcher, which starts the jail (and closes it when it closes).
    """

    def __init__(self, launcher: Launcher) -> None:
        self._launcher = launcher
        self._current: _Resident | None = None
        self._busy = False
        self._closed = False
        # Why no resident can start for this session (no interpreter it can run): it then runs none.
        self._broken: str | None = None
        self.started = 0
        """How many resident jails this session started (tests and benchmarks read it)."""

    @property
    def outer_pid(self) -> int | None:
        """The host pid of the running resident's outer bwrap, None when none runs."""
        return None if self._current is None else self._current.process.pid

    @property
    def init_pid(self) -> int | None:
        """The host pid of the running resident's init (the helper), None when none runs (it reads /proc)."""
        return None if self._current is None else jail_init(self._current.process.pid)

    async def spawn(
        self,
        argv: Sequence[str],
        *,
        policy: JailPolicy,
        cwd: str,
        env: Mapping[str, str],
        state_fd: int,
        idle_seconds: float,
    ) -> ResidentProcess | None:
        """Run ``argv`` in the resident jail, starting one first where none runs for this policy.

        Args:
            argv: The command (the terminal's wrapped shell).
            policy: The session's policy now; a jailed one (None is returned for ``full-access``).
            cwd: Its working directory as the jail sees it.
            env: Its environment, before the jail's changes (:func:`~tools.jail._mounts.jail_env`).
            state_fd: Our descriptor the command inherits at the same number (the shell's state pipe).
            idle_seconds: How long a resident started now waits for a command before it ends.

        Returns:
            The running command; None when it must run in a jail of its own: the resident is busy, the
            policy is not jailed, the request is larger than the socket takes or holds what cannot travel in it
            (a NUL byte: the jail per command refuses it in its own words), or no jail runs here.

        Raises:
            PathRefused: ``cwd`` is hidden by the policy.
            FileNotFoundError: ``cwd`` or the program does not exist in the jail (``filename`` says which).
            OSError: the command could not be started; ResidentShellLost when the jail ended meanwhile.
            JailUnavailable, LimitsNotApplied, LauncherClosed: as ``Launcher.spawn``, starting the jail.
        """
        if self._busy or self._closed or not policy.jailed or state_fd < STATE_FD_MIN:
            return None
        if not self._launcher.status.available:
            return None
        # What the per-command path checks on its spawn thread: a few lstat calls.
        policy.check_cwd(cwd)
        jailed_env, hide = jail_env(env, policy)
        if self._broken is not None:
            return None
        self._busy = True
        try:
            started = await self._run(argv, (policy, hide, idle_seconds), cwd=cwd, env=env, jailed_env=jailed_env,
                                      state_fd=state_fd)  # fmt: skip
        except BaseException:
            self._busy = False
            raise
        if started is None:
            self._busy = False
        return started

    async def _run(
        self, argv: Sequence[str], key: tuple[JailPolicy, tuple[str, ...], float], *, cwd: str,
        env: Mapping[str, str], jailed_env: dict[str, str], state_fd: int,
    ) -> ResidentProcess | None:  # fmt: skip
        request = _run_request(argv, cwd, jailed_env, state_fd)
        if request is None:
            return None
        try:
            resident = await self._ready(key, env)
        except OSError as exc:
            self._cannot_start(exc)
            return None
        out_read, out_write = os.pipe()
        try:
            try:
                resident.send(request, (out_write, state_fd))
            finally:
                os.close(out_write)
        except OSError as exc:
            os.close(out_read)
            if exc.errno == errno.EMSGSIZE:
                return None
            if resident.state() == "refused":  # and exited before the request
                await self._refused(resident, await resident.receive())
            else:
                await self.lost(resident)
            return None
        stdout = trio.lowlevel.FdStream(out_read)
        answer = await self._answer(resident)
        if answer is None:
            stdout.close()
            raise ResidentShellLost("the session's resident shell ended while it started the command")
        if answer[0] == "refused":
            stdout.close()
            await self._refused(resident, answer)
            return None
        if answer[0] == "error":
            stdout.close()
            number, what = int(answer[1]), answer[2]
            if what == "cwd":
                # In the words of a jail per command (Launcher.spawn), which looked on the host.
                text = "No such directory" if number == errno.ENOENT else os.strerror(number)
                raise OSError(number, text, cwd)
            raise OSError(number, os.strerror(number), argv[0])
        process = ResidentProcess(self, resident, stdout)
        try:
            await trio.lowlevel.checkpoint_if_cancelled()
        except BaseException:
            await process.stop(0)
            process.close_pipes()
            raise
        return process

    async def _answer(self, resident: _Resident) -> list[str] | None:
        """The helper's answer to a run request (shielded: the command may have started), ``refused`` the
        first's where it refused to run; None when it ended or does not answer, after it was closed."""
        answer: list[str] | None = None
        with trio.CancelScope(shield=True):
            with trio.move_on_after(_ANSWER_SECONDS):
                answer = await resident.receive()
            if not answer or not (answer[0] in ("started", "refused") or (answer[0] == "error" and len(answer) == 3)):
                await self.lost(resident)
                return None
        return answer

    async def _ready(self, key: tuple[JailPolicy, tuple[str, ...], float], env: Mapping[str, str]) -> _Resident:
        current = self._current
        if current is not None:
            state = "retiring" if current.retiring else current.state()
            if state != "alive" or current.key != key:
                if state == "dead":
                    log.warning(
                        "the resident shell of a session ended (outer bwrap %d); starting a new one", current.process.pid
                    )
                elif state == "retiring":
                    log.info("a command changed the limits, nice value or CPUs of its resident shell: starting a new one")
                self._current = None
                await current.aclose()
                current = None
        if current is None:
            current = await self._start(key, env)
            self._current = current
        return current

    async def _start(self, key: tuple[JailPolicy, tuple[str, ...], float], env: Mapping[str, str]) -> _Resident:
        policy, _, idle_seconds = key
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            ours.setblocking(False)
            argv = [*_init_command(), str(theirs.fileno()), repr(float(idle_seconds))]
            # Of the command's environment, what decides the jail's mounts (an ssh-agent it hides) and no more:
            # each command gets its own whole.
            mounted = {name: env[name] for name in ("SSH_AUTH_SOCK",) if name in env}
            process = await self._launcher.spawn(
                argv, policy=policy, cwd="/", env=mounted, pass_fds=(theirs.fileno(),), as_init=True
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        # It sends its own output to /dev/null.
        process.close_pipes()
        resident = _Resident(process, ours, key)
        try:
            # Its first request; it answers the next (the command's) ``refused`` if its check failed: no round
            # trip of its own (0.13 ms of the daemon's CPU).
            resident.send(_not_shared(policy, process))
            self._launcher.keep_resident(self, process)
        except OSError:
            await resident.aclose()
            raise
        self.started += 1
        log.debug("started a resident shell (outer bwrap %d)", process.pid)
        return resident

    def _cannot_start(self, exc: OSError) -> None:
        """No resident could start for a command, which then runs in a jail of its own; where the init's
        interpreter cannot be run at all, or it refused to, every later one does too."""
        if isinstance(exc, (FileNotFoundError, PermissionError)):
            self._broken = str(exc)
        log.warning("the resident shell could not start (%s); the command runs in a jail of its own", exc)

    async def _refused(self, resident: _Resident, answer: list[str] | None) -> None:
        """``resident``'s init refused to run (``answer`` says why): it is closed, and the session runs no other."""
        if resident is self._current:
            self._current = None
        await resident.aclose()
        why = " ".join((answer or [])[1:]) or "it did not say why"
        self._cannot_start(ResidentRefused(errno.EPERM, f"its init refused to run: {why}"))

    def release(self, resident: _Resident) -> None:
        """The command ``resident`` ran has ended: the next may use it."""
        if resident is self._current or self._current is None:
            self._busy = False

    async def lost(self, resident: _Resident) -> None:
        """``resident`` ended or broke under a command: it is closed, and the next command starts another."""
        log.warning("the resident shell of a session ended under a command (outer bwrap %d)", resident.process.pid)
        if resident is self._current:
            self._current = None
        self._busy = False
        await resident.aclose()

    async def aclose(self) -> None:
        """End the resident jail and everything in it (at the session's end, or the launcher's); shielded.
        Later commands run in a jail each."""
        self._closed = True
        current, self._current = self._current, None
        if current is not None:
            await current.aclose()


def _run_request(argv: Sequence[str], cwd: str, env: Mapping[str, str], state_fd: int) -> bytes | None:
    """The init's ``run`` request; None where a field cannot travel in it (a NUL byte, a name with ``=``,
    text that has no bytes): a jail per command refuses it with its own error."""
    fields = ["run", str(state_fd), cwd, str(len(argv)), *argv, *(f"{name}={value}" for name, value in env.items())]
    text = "\0".join(fields)
    # The separators are its only NUL bytes, and a name holds no "=".
    if text.count("\0") != len(fields) - 1 or any("=" in name or not name for name in env):
        return None
    try:
        return os.fsencode(text)
    except UnicodeEncodeError:
        return None


def namespaces_request(policy: JailPolicy, pid: int | str = "self") -> bytes:
    """The init's first request: the namespaces of process ``pid`` (the daemon itself) that a jail by ``policy``
    does not share, as ``readlink`` shows them (``ipc:[4026531839]``).

    Raises:
        OSError: they cannot be read.
    """
    kinds = _UNSHARED if policy.network else (*_UNSHARED, "net")
    return b"\0".join([b"namespaces", *(os.fsencode(os.readlink(f"/proc/{pid}/ns/{kind}")) for kind in kinds)])


def _not_shared(policy: JailPolicy, process: JailedProcess) -> bytes:
    """What the resident jail ``process`` is told it must not share: the daemon's own namespaces. A seam: tests
    name the jail's own instead, or garble the request, and see its init refuse."""
    return namespaces_request(policy)


@functools.cache
def _init_command() -> list[str]:
    """The command line of the init, less its two arguments (the control socket's descriptor, the idle time).

    Raises:
        FileNotFoundError: no Perl can be run, or this machine's system-call numbers are not the init's.
    """
    machine = os.uname().machine
    if machine not in _MACHINES:
        raise FileNotFoundError(errno.ENOENT, f"the resident shell's init knows no system calls of {machine}", "perl")
    # The system's first (Essential on Debian and Ubuntu, and in every jail's /usr), not one under a home
    # directory a jail may hide.
    perl = _SYSTEM_PERL if os.access(_SYSTEM_PERL, os.X_OK) else shutil.which("perl")
    if perl is None or not os.access(perl, os.X_OK):
        raise FileNotFoundError(errno.ENOENT, "no Perl interpreter the daemon's user can run", "perl")
    return [perl, "-e", _SOURCE, "--", machine]
