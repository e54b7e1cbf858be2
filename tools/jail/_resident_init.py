"""The init of a session's resident jail: it runs that session's foreground commands, one at a time.

This file is not imported by the daemon: its source is run inside the jail by
``python -S -I -c <source or its compiled code> <control fd> <idle seconds>`` as the PID namespace's init (``bwrap --as-pid-1``;
see :mod:`tools.jail.resident`). It imports only C modules of the standard library (``socket``, ``signal``,
``json``, ``subprocess`` and ``ctypes`` would cost 25 ms more of CPU at every start, five jails' worth), and
runs on Python 3.9 or later: where the daemon's own interpreter is out of reach, the system's runs it.
Commands start through ``posix_spawn`` (0.7 ms of CPU less than Python's ``fork``); glibc's leaves its two
internal signals (32 and 33) ignored in the command, which glibc and Go programs override when they use them.

Why it can stay a wall while a command runs beside it:

- it is the namespace's init, so no process of the namespace can send it a signal it does not handle
  (``kill -9 1`` does nothing), and ``kill(-1, SIGKILL)`` from it reaches every other process of the
  namespace, ``setsid`` grandchildren included, and nothing outside it;
- it makes itself non-dumpable at once, so a command of the same uid cannot open ``/proc/1/mem`` or its
  control socket through ``/proc/1/fd`` (the system-call filter already refuses ``ptrace``);
- every descriptor of its own is close-on-exec, so a command gets only its output, ``/dev/null`` and its
  state pipe; the signal handlers set here are reset by the command's ``exec``;
- what a command inherits from it that a process of the same uid may change from outside (resource limits,
  nice value, CPU affinity, scheduling policy, I/O priority, ``oom_score_adj``) is put back after each
  command, or it ends.

The protocol on the SOCK_SEQPACKET control socket. The daemon sends ``marshal`` tuples:
``("run", argv, cwd, env, fd)`` with two descriptors attached (the output pipe's write end, then the state
pipe's, which the command gets at number ``fd``), or ``("signal", signum)``: that signal to every process of
the namespace but this one. This process answers in ASCII:

- ``started``, or ``error <errno> cwd|program`` (the command did not start: its directory or its program);
- ``exit <returncode> <left> <retire>`` once the command exited and the namespace has been swept (every other
  process killed and reaped), ``/dev/shm`` emptied and System V IPC objects removed; ``left`` is 1 when
  anything else still ran,
  ``retire`` 1 when this process ends now (the command changed what the next would inherit, beyond repair:
  see :func:`_inherited`);
- ``idle`` just before it exits, after ``idle seconds`` without a command.

It exits when the daemon's end of the socket closes, and with it the whole namespace.
"""

from __future__ import annotations

import _ctypes
import _signal  # type: ignore[import-not-found]  # signal without its enum (12 ms at start)
import _socket
import marshal
import os
import resource
import select
import sys

_PR_SET_DUMPABLE = 4
# A request is at most what a socket's send buffer holds (a few hundred KB); the daemon falls back above.
_MAX_REQUEST = 1 << 22
_SHM = "/dev/shm"
_INT_SIZE = 4
# Restored to their defaults in a command (Python ignores them; an ignored signal survives exec).
_DEFAULT_SIGNALS = (_signal.SIGPIPE, _signal.SIGXFSZ)


class _Int(_ctypes._SimpleCData):
    _type_ = "i"


class _Function(_ctypes.CFuncPtr):
    _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO
    _restype_ = _Int


class _Libc:
    _handle = _ctypes.dlopen(None, os.RTLD_NOW)  # type: ignore[arg-type]  # None: the program's own symbols


def _ignore(signum: int, frame: object) -> None:
    """A handler that does nothing: unlike SIG_IGN, ``exec`` resets it, so commands get the default."""


def _non_dumpable() -> None:
    prctl = _Function(("prctl", _Libc()))  # type: ignore[arg-type]  # what it reads of a library is _handle
    if prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise OSError(_ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0) failed")


def _remove(path: str) -> None:
    """Remove ``path`` and all under it, opening up read-only directories; symbolic links are not followed."""
    try:
        os.unlink(path)
        return
    except IsADirectoryError:
        pass  # Linux answers EISDIR for a directory (a symbolic link to one is unlinked above)
    except OSError:
        return
    try:
        os.chmod(path, 0o700)
        with os.scandir(path) as entries:
            names = [entry.path for entry in entries]
        for name in names:
            _remove(name)
        os.rmdir(path)
    except (OSError, RecursionError):
        return


# System V IPC objects of the jail's own IPC namespace, by the C function that removes one (IPC_RMID is 0).
_SYSV_IPC = (("/proc/sysvipc/shm", "shmctl"), ("/proc/sysvipc/sem", "semctl"), ("/proc/sysvipc/msg", "msgctl"))
_IPC_RMID = 0


def _remove_sysv_ipc() -> bool:
    """Remove the System V shared memory, semaphores and message queues a command left, as its own jail's
    end did; False when one stays."""
    left = False
    for listing, function in _SYSV_IPC:
        try:
            with open(listing) as handle:
                ids = [int(line.split()[1]) for line in handle.read().splitlines()[1:] if line.strip()]
        except (OSError, ValueError, IndexError):
            continue  # no System V IPC in this kernel
        if ids:
            remove = _Function((function, _Libc()))  # type: ignore[arg-type]  # what it reads of a library is _handle
            left |= any(remove(ipc_id, _IPC_RMID, None) != 0 for ipc_id in ids)
    return not left


def _empty_shm() -> bool:
    """Remove what the command left in ``/dev/shm``; False when something stays."""
    try:
        for name in os.listdir(_SHM):
            _remove(os.path.join(_SHM, name))
        return not os.listdir(_SHM)
    except OSError:
        return False


_LIMITS = tuple(getattr(resource, name) for name in dir(resource) if name.startswith("RLIMIT_"))
_OOM_SCORE_ADJ = "/proc/self/oom_score_adj"
# ioprio_set and ioprio_get by machine (no C library wraps them); IOPRIO_WHO_PROCESS is 1.
_IOPRIO_CALLS = {"x86_64": (251, 252), "aarch64": (30, 31)}.get(os.uname().machine)
_IOPRIO_WHO_PROCESS = 1


def _syscall(*args: int) -> int:
    call = _Function(("syscall", _Libc()))  # type: ignore[arg-type]  # what it reads of a library is _handle
    result: int = call(*args)
    return result


def _ioprio() -> int:
    return -1 if _IOPRIO_CALLS is None else _syscall(_IOPRIO_CALLS[1], _IOPRIO_WHO_PROCESS, 0)


def _oom_score_adj() -> str:
    try:
        with open(_OOM_SCORE_ADJ) as handle:
            return handle.read()
    except OSError:
        return ""


# Resource limits, nice value, CPU affinity, scheduling policy and priority, I/O priority, oom_score_adj.
_Inherited = tuple[tuple[tuple[int, int], ...], int, frozenset[int], tuple[int, int], int, str]


def _inherited() -> _Inherited:
    """What a command inherits from this process that a process of the same uid may change from outside
    (``prlimit``, ``renice``, ``taskset``, ``chrt``, ``ionice`` on pid 1, its ``oom_score_adj``): resource
    limits, nice value, CPU affinity, scheduling policy, I/O priority, the out-of-memory killer's bias."""
    return (
        tuple(resource.getrlimit(limit) for limit in _LIMITS),
        os.getpriority(os.PRIO_PROCESS, 0),
        frozenset(os.sched_getaffinity(0)),
        (os.sched_getscheduler(0), os.sched_getparam(0).sched_priority),
        _ioprio(),
        _oom_score_adj(),
    )


def _restore(wanted: _Inherited) -> bool:
    """Put back what a command changed of :func:`_inherited`; False where that cannot be done (a lowered
    hard limit, a raised nice value or ``oom_score_adj``, a real-time I/O class: only privilege undoes them)."""
    limits, nice, cpus, (policy, priority), ioprio, _ = wanted
    try:
        if (os.sched_getscheduler(0), os.sched_getparam(0).sched_priority) != (policy, priority):
            os.sched_setscheduler(0, policy, os.sched_param(priority))
        if _IOPRIO_CALLS is not None and _ioprio() != ioprio and _syscall(
            _IOPRIO_CALLS[0], _IOPRIO_WHO_PROCESS, 0, ioprio
        ) != 0:
            return False
        for limit, value in zip(_LIMITS, limits):  # not strict=: the system's Python may be 3.9
            if resource.getrlimit(limit) != value:
                resource.setrlimit(limit, value)
        if os.getpriority(os.PRIO_PROCESS, 0) != nice:
            os.setpriority(os.PRIO_PROCESS, 0, nice)
        if frozenset(os.sched_getaffinity(0)) != cpus:
            os.sched_setaffinity(0, cpus)
    except (OSError, ValueError):
        return False
    return _inherited() == wanted


def _anything_running() -> bool:
    try:
        os.kill(-1, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _program(name: str, env: dict[str, str]) -> str | None:
    """Where ``name`` is, looked up in the command's own ``PATH`` (``posix_spawnp`` would use ours)."""
    if "/" in name:
        return name
    for directory in env.get("PATH", os.defpath).split(os.pathsep):
        path = os.path.join(directory or ".", name)
        if os.access(path, os.X_OK) and not os.path.isdir(path):
            return path
    return None


class _Init:
    """The loop: one request at a time, the namespace swept after every command."""

    def __init__(self, control: _socket.socket, idle_seconds: float) -> None:
        self.control = control
        self.idle_ms = int(idle_seconds * 1000)
        self.wake_read, wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        _signal.set_wakeup_fd(wake_write, warn_on_full_buffer=False)
        _signal.signal(_signal.SIGCHLD, _ignore)
        # Python's own SIGINT handler would raise KeyboardInterrupt here when a command signals pid 1.
        _signal.signal(_signal.SIGINT, _ignore)
        self.child: int | None = None
        self.inherited = _inherited()

    def serve(self) -> None:
        poller = select.poll()
        poller.register(self.control.fileno(), select.POLLIN)
        poller.register(self.wake_read, select.POLLIN)
        while True:
            events = poller.poll(None if self.child is not None else self.idle_ms)
            if not events:
                self._send(b"idle")
                return
            for fd, _ in events:
                if fd == self.wake_read:
                    while True:
                        try:
                            if not os.read(self.wake_read, 512):
                                break
                        except BlockingIOError:
                            break
                    if self._reap():
                        return
                elif not self._request():
                    return

    def _send(self, message: bytes) -> None:
        try:
            self.control.send(message)
        except OSError:
            pass  # the daemon is gone: the next read sees it

    def _request(self) -> bool:
        try:
            data, ancillary, _, _ = self.control.recvmsg(_MAX_REQUEST, _socket.CMSG_SPACE(2 * _INT_SIZE))
        except OSError:
            return False
        if not data:
            return False
        fds: list[int] = []
        for level, kind, payload in ancillary:
            if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
                fds += memoryview(payload)[: len(payload) - len(payload) % _INT_SIZE].cast("i").tolist()
        try:
            for fd in fds:
                os.set_inheritable(fd, False)
            request = marshal.loads(data)
            if request[0] == "signal" and self.child is not None:
                try:
                    os.kill(-1, int(request[1]))
                except ProcessLookupError:
                    pass
            elif request[0] == "run":
                self._run(request[1], request[2], request[3], int(request[4]), fds)
        finally:
            for fd in fds:
                os.close(fd)
        return True

    def _run(self, argv: list[str], cwd: str, env: dict[str, str], target: int, fds: list[int]) -> None:
        if self.child is not None or len(fds) != 2:
            self._send(b"error 16 program")  # EBUSY: the daemon sends one command at a time
            return
        output, state = fds
        try:
            os.chdir(cwd)  # the command inherits it
        except OSError as exc:
            self._send(b"error %d cwd" % (exc.errno or 0))
            return
        program = _program(argv[0], env)
        if program is None:
            self._send(b"error 2 program")
            return
        try:
            self.child = os.posix_spawn(
                program, argv, env, setsid=True, setsigdef=_DEFAULT_SIGNALS, file_actions=[
                    (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                    (os.POSIX_SPAWN_DUP2, output, 1), (os.POSIX_SPAWN_DUP2, output, 2),
                    (os.POSIX_SPAWN_DUP2, state, target),
                ],
            )  # fmt: skip
        except OSError as exc:
            self._send(b"error %d program" % (exc.errno or 0))
            return
        self._send(b"started")

    def _reap(self) -> bool:
        """Reap what exited; when it was the command, sweep the namespace and send its exit. True when this
        process must then end: the command changed what the next would inherit from it, beyond repair."""
        status: int | None = None
        while True:
            try:
                pid, raw = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            if pid == self.child:
                status = raw
        if status is None:
            return False
        left = _anything_running()
        self._sweep()
        self.child = None
        retire = not _empty_shm() or not _remove_sysv_ipc() or not _restore(self.inherited)
        self._send(b"exit %d %d %d" % (os.waitstatus_to_exitcode(status), left, retire))
        return retire

    def _sweep(self) -> None:
        """Kill and reap every process of the namespace but this one."""
        while _anything_running():
            try:
                os.kill(-1, _signal.SIGKILL)
            except ProcessLookupError:
                pass
            while True:
                try:
                    os.waitpid(-1, 0)
                except ChildProcessError:
                    break


def main(argv: list[str]) -> int:
    """Run as the jail's init; refuse to run anywhere else (its sweep kills every process it can see)."""
    if os.getpid() != 1:
        os.write(2, b"the resident shell's init runs only as pid 1 of a jail\n")
        return 2
    _non_dumpable()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd, inheritable=False)
    os.close(null)
    # Our descriptors all sit low (the daemon's number could be any): a command's state pipe goes at 64 or
    # above (see tools.jail.resident), so it never lands on one of ours.
    passed = int(argv[-2])
    control = _socket.socket(fileno=os.dup(passed))
    os.close(passed)
    _Init(control, float(argv[-1])).serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
