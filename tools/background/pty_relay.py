"""Run a command on a pseudo-terminal and relay it to plain pipes: the terminal tool's ``pty=true``.

Not imported by the daemon: :mod:`tools.background._pty` hands this file's text to the interpreter
(``python -I -c <text> <grace> <argv...>``) as the process a jail starts, so the pseudo-terminal is
made inside the jail, from the jail's own ``/dev/pts``. Standard library only.

The command runs as the leader of a new session whose controlling terminal is the pty, so
programs that ask ``isatty()`` or open ``/dev/tty`` (REPLs, coding CLIs, password prompts) behave as
in a terminal. The relay copies the pty's output to its stdout, and its stdin to the pty; the end of
its stdin becomes an end-of-file character (Ctrl-D), as closing a terminal's input would. It exits
with the command's status (128+N when a signal N killed it, as a shell reports it).

Stopping: SIGTERM, SIGINT or SIGHUP to the relay is passed to the command's process group, and after
``grace`` seconds a SIGKILL follows; the command also gets SIGKILL when the relay dies
(``PR_SET_PDEATHSIG``), and the rest of its session a hangup when the pty closes.
"""

from __future__ import annotations

import errno
import fcntl
import os
import pty
import select
import signal
import struct
import sys
import termios
import time
from types import FrameType

# Hermes Agent's size for a background process's terminal.
ROWS, COLUMNS = 30, 120
_READ_SIZE = 65536
_EOF_CHARACTER = b"\x04"
_DRAIN_SECONDS = 0.2
_PR_SET_PDEATHSIG = 1
_SIGNAL_BASE = 128


def _write_all(fd: int, data: bytes) -> bool:
    """Write all of ``data``; False when the other side is gone."""
    while data:
        try:
            written = os.write(fd, data)
        except OSError as exc:
            if exc.errno == errno.EAGAIN:
                select.select([], [fd], [])
                continue
            return False
        data = data[written:]
    return True


def _read(fd: int) -> bytes:
    """A chunk of ``fd``; b"" at its end (a pty's master reads EIO once no one holds the other side)."""
    try:
        return os.read(fd, _READ_SIZE)
    except OSError:
        return b""


def _become_command(argv: list[str]) -> None:
    """In the forked child: size the terminal, die with the relay, and exec the command."""
    try:
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError, ImportError):
        pass
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        os.write(2, f"{argv[0]}: {exc.strerror}\n".encode())
    os._exit(127)


class _Relay:
    """The parent's side: copies between the pipes and the pty until the command exits."""

    def __init__(self, pid: int, master: int, grace: float) -> None:
        self.pid = pid
        self.master = master
        self.grace = grace
        self.kill_at: float | None = None
        self.escalated = False
        self.status: int | None = None
        self.stdin_open = True
        self.wakeup_r, wakeup_w = os.pipe()
        os.set_blocking(wakeup_w, False)
        signal.set_wakeup_fd(wakeup_w)
        signal.signal(signal.SIGCHLD, lambda signum, frame: None)
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, self._forward)

    def _forward(self, signum: int, frame: FrameType | None) -> None:
        try:
            os.killpg(self.pid, signum)
        except OSError:
            pass
        if self.kill_at is None and not self.escalated:
            self.kill_at = time.monotonic() + self.grace

    def _reap(self) -> bool:
        if self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(status)
        return self.status is not None

    def _escalate(self) -> None:
        if self.kill_at is not None and time.monotonic() >= self.kill_at:
            self.kill_at, self.escalated = None, True
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except OSError:
                pass

    def run(self) -> int:
        """Relay until the command has exited and its output is read; returns the exit status to give."""
        master_open = True
        while not self._reap():
            readable = [self.wakeup_r] + ([self.master] if master_open else []) + ([0] if self.stdin_open else [])
            timeout = None if self.kill_at is None else max(0.0, self.kill_at - time.monotonic())
            ready, _, _ = select.select(readable, [], [], timeout)
            self._escalate()
            if self.wakeup_r in ready:
                os.read(self.wakeup_r, _READ_SIZE)
            if self.master in ready:
                data = _read(self.master)
                master_open = bool(data) and _write_all(1, data)
            if 0 in ready:
                self._take_input()
        self._drain()
        assert self.status is not None
        return _SIGNAL_BASE - self.status if self.status < 0 else self.status

    def _take_input(self) -> None:
        data = _read(0)
        if not data:
            self.stdin_open = False
            data = _EOF_CHARACTER
        _write_all(self.master, data)

    def _drain(self) -> None:
        """What the command printed before it exited, still in the pty (bounded: leftovers may go on)."""
        deadline = time.monotonic() + _DRAIN_SECONDS
        while time.monotonic() < deadline and select.select([self.master], [], [], 0)[0]:
            data = _read(self.master)
            if not data or not _write_all(1, data):
                return


def main(args: list[str]) -> None:
    """``args``: the grace in seconds, then the command's argv."""
    grace, argv = float(args[0]), args[1:]
    pid, master = pty.fork()
    if pid == 0:
        _become_command(argv)
    sys.exit(_Relay(pid, master, grace).run())


if __name__ == "__main__":
    main(sys.argv[1:])
