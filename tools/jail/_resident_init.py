"""The init of a session's resident jail: it runs that session's foreground commands, one at a time.

This file is not imported by the daemon: its source is run inside the jail by
``python -S -I -c <source> <control fd> <idle seconds>`` as the PID namespace's init (``bwrap --as-pid-1``;
see :mod:`tools.jail.resident`). Standard library only, and Python 3.9 or later: where the daemon's own
interpreter is out of reach, the system's runs it.

Why it can stay a wall while a command runs beside it:

- it is the namespace's init, so no process of the namespace can send it a signal it does not handle
  (``kill -9 1`` does nothing), and ``kill(-1, SIGKILL)`` from it reaches every other process of the
  namespace, ``setsid`` grandchildren included, and nothing outside it;
- it makes itself non-dumpable at once, so a command of the same uid cannot open ``/proc/1/mem`` or its
  control socket through ``/proc/1/fd`` (the system-call filter already refuses ``ptrace``);
- a command's process is forked with every descriptor but its output and its state pipe closed, and the
  signal handlers set here are reset by its ``exec``.

The protocol, one JSON object per packet on the SOCK_SEQPACKET control socket:

- ``{"op": "run", "argv": [...], "cwd": ..., "env": {...}, "fd": N}`` with two descriptors attached
  (the output pipe's write end, then the state pipe's, which the command gets at number ``N``); the answer
  is ``{"started": pid}`` or ``{"error": [errno, strerror, filename]}``;
- ``{"op": "signal", "signal": S}``: ``S`` to every process of the namespace but this one;
- when the command's process has exited: ``{"exit": returncode, "left": bool, "retire": bool}``, sent only
  once the namespace has been swept (every other process killed and reaped) and ``/dev/shm`` emptied,
  ``left`` saying whether anything was still running when it exited, ``retire`` that it ends now: the
  command changed what the next would inherit from it (its resource limits, nice value, CPU affinity or
  ``oom_score_adj``, which a process of the same uid may change from outside) in a way it cannot undo;
- ``{"idle": true}`` just before it exits, after ``idle seconds`` without a command.

It exits when the daemon's end of the socket closes, and with it the whole namespace.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import select
import shutil
import signal
import socket
import subprocess
import sys
from typing import Any

_PR_SET_DUMPABLE = 4
# A request is at most what a socket's send buffer holds (a few hundred KB); the daemon falls back above.
_MAX_REQUEST = 1 << 22
_SHM = "/dev/shm"


def _ignore(signum: int, frame: object) -> None:
    """A handler that does nothing: unlike SIG_IGN, ``exec`` resets it, so commands get the default."""


def _non_dumpable() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0) failed")


def _empty_shm() -> None:
    """Remove what the command left in ``/dev/shm`` (best effort: a read-only directory is opened first)."""
    try:
        entries = list(os.scandir(_SHM))
    except OSError:
        return
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                # Opened up from the top down before the walk descends (it lists each directory as it enters);
                # a symbolic link is not followed (nor removed through: rmtree unlinks it).
                os.chmod(entry.path, 0o700)
                for root, dirs, _ in os.walk(entry.path):
                    for name in dirs:
                        if not os.path.islink(path := os.path.join(root, name)):
                            os.chmod(path, 0o700)
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                os.unlink(entry.path)
        except OSError:
            continue


_LIMITS = tuple(getattr(resource, name) for name in dir(resource) if name.startswith("RLIMIT_"))


_OOM_SCORE_ADJ = "/proc/self/oom_score_adj"


def _oom_score_adj() -> str:
    try:
        with open(_OOM_SCORE_ADJ) as handle:
            return handle.read()
    except OSError:
        return ""


def _inherited() -> tuple[object, ...]:
    """What a command inherits from this process that a process of the same uid may change from outside
    (``prlimit``, ``renice``, ``taskset`` on pid 1, its ``oom_score_adj``): resource limits, nice value,
    CPU affinity, the out-of-memory killer's bias."""
    return (
        tuple(resource.getrlimit(limit) for limit in _LIMITS),
        os.getpriority(os.PRIO_PROCESS, 0),
        frozenset(os.sched_getaffinity(0)),
        _oom_score_adj(),
    )


def _restore(wanted: tuple[object, ...]) -> bool:
    """Put back what a command changed of :func:`_inherited`; False where that cannot be done (a lowered
    hard limit, a raised nice value or ``oom_score_adj``: only privilege undoes them)."""
    limits, nice, cpus, _ = wanted
    assert isinstance(limits, tuple) and isinstance(nice, int) and isinstance(cpus, frozenset)
    try:
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


class _Init:
    """The loop: one request at a time, the namespace swept after every command."""

    def __init__(self, control: socket.socket, idle_seconds: float) -> None:
        self.control = control
        self.idle_ms = int(idle_seconds * 1000)
        self.wake_read, wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(wake_write, warn_on_full_buffer=False)
        signal.signal(signal.SIGCHLD, _ignore)
        # Python's own SIGINT handler would raise KeyboardInterrupt here when a command signals pid 1.
        signal.signal(signal.SIGINT, _ignore)
        self.child: int | None = None
        self.inherited = _inherited()

    def serve(self) -> None:
        poller = select.poll()
        poller.register(self.control, select.POLLIN)
        poller.register(self.wake_read, select.POLLIN)
        while True:
            events = poller.poll(None if self.child is not None else self.idle_ms)
            if not events:
                self._send({"idle": True})
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

    def _send(self, message: dict[str, Any]) -> None:
        try:
            self.control.send(json.dumps(message).encode())
        except OSError:
            pass  # the daemon is gone: the next read sees it

    def _request(self) -> bool:
        try:
            data, fds, flags, _ = socket.recv_fds(self.control, _MAX_REQUEST, 2)
        except OSError:
            return False
        if not data:
            return False
        try:
            request = json.loads(data)
            if request.get("op") == "signal":
                if self.child is not None:
                    try:
                        os.kill(-1, int(request["signal"]))
                    except ProcessLookupError:
                        pass
            elif request.get("op") == "run":
                self._run(request, fds)
        finally:
            for fd in fds:
                os.close(fd)
        return True

    def _run(self, request: dict[str, Any], fds: list[int]) -> None:
        if self.child is not None or len(fds) != 2:
            self._send({"error": [16, "the resident shell is busy or was sent no pipes", None]})
            return
        output, state = fds
        target = int(request["fd"])
        try:
            os.dup2(state, target, inheritable=True)
            try:
                process = subprocess.Popen(
                    request["argv"], cwd=request["cwd"], env=request["env"], stdin=subprocess.DEVNULL,
                    stdout=output, stderr=output, pass_fds=(target,), close_fds=True, start_new_session=True,
                )  # fmt: skip
            finally:
                os.close(target)
        except OSError as exc:
            self._send({"error": [exc.errno, exc.strerror, exc.filename]})
            return
        # This loop reaps every child itself, the command's included: marked done, the Popen object is not
        # kept to be reaped by a later Popen (which would take the command's status first).
        process.returncode = 0
        self.child = process.pid
        self._send({"started": process.pid})

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
        retire = not _restore(self.inherited)
        self._send({"exit": os.waitstatus_to_exitcode(status), "left": left, "retire": retire})
        return retire

    def _sweep(self) -> None:
        """Kill and reap every process of the namespace but this one, then empty ``/dev/shm``."""
        while _anything_running():
            try:
                os.kill(-1, signal.SIGKILL)
            except ProcessLookupError:
                pass
            while True:
                try:
                    os.waitpid(-1, 0)
                except ChildProcessError:
                    break
        _empty_shm()


def main(argv: list[str]) -> int:
    """Run as the jail's init; refuse to run anywhere else (its sweep kills every process it can see)."""
    if os.getpid() != 1:
        print("the resident shell's init runs only as pid 1 of a jail", file=sys.stderr)
        return 2
    _non_dumpable()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    # Our descriptors all sit low (the daemon's number could be any): a command's state pipe goes at 64 or
    # above (see tools.jail.resident), so it never lands on one of ours.
    passed = int(argv[1])
    control = socket.socket(fileno=os.dup(passed))
    os.close(passed)
    _Init(control, float(argv[2])).serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
