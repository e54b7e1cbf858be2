"""A real ``hermes-actors`` process in a pseudo-terminal, read through ``pyte`` as a person would see it."""

from __future__ import annotations

import fcntl
import os
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pyte

from tests.daemon.helpers import REPO, environment

#: How long a pty test waits for something to show before it fails.
SCREEN_TIMEOUT = 20.0


class _Screen(pyte.HistoryScreen):
    """A screen that answers the terminal's status queries (the cursor position) to the child, like xterm."""

    def __init__(self, columns: int, lines: int, reply: Callable[[str], None]) -> None:
        super().__init__(columns, lines, history=5000, ratio=0.5)
        self._reply = reply

    def write_process_input(self, data: str) -> None:
        self._reply(data)


class PtyTerminal:
    """``hermes-actors ARGS`` with a pty of ``columns`` x ``lines`` as its controlling terminal.

    Everything the child writes is fed to a ``pyte`` screen (with scrollback) and kept raw with the time
    it was read, so a test can assert on what is on screen or when it got there. Without ``emulate`` the
    bytes are only kept (a benchmark replays them later, so emulation costs nothing while it measures).
    """

    def __init__(
        self, home: Path, *args: str, columns: int = 80, lines: int = 24, env: dict[str, str] | None = None,
        emulate: bool = True,
    ) -> None:
        self.master, self.slave = os.openpty()
        fcntl.ioctl(self.slave, termios.TIOCSWINSZ, struct.pack("HHHH", lines, columns, 0, 0))
        self.screen = _Screen(columns, lines, self._reply)
        self.stream = pyte.ByteStream(self.screen)
        self.chunks: list[tuple[float, bytes]] = []
        self.emulate = emulate
        self._lock = threading.Lock()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "cli", *args],
            env=environment(home, TERM="xterm-256color", COLUMNS=str(columns), LINES=str(lines), **(env or {})),
            cwd=REPO, stdin=self.slave, stdout=self.slave, stderr=self.slave,
            start_new_session=True, preexec_fn=_take_terminal,
        )
        self._reader = threading.Thread(target=self._pump, daemon=True)
        self._reader.start()

    def _reply(self, data: str) -> None:
        os.write(self.master, data.encode())

    def _pump(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            with self._lock:
                self.chunks.append((time.monotonic(), data))
                if self.emulate:
                    self.stream.feed(data)

    def type(self, text: str) -> None:
        """Keys typed by a person (``\\r`` is Enter, ``\\x03`` Ctrl-C, ``\\x04`` Ctrl-D)."""
        os.write(self.master, text.encode())

    def display(self) -> list[str]:
        """The visible rows, right-trimmed."""
        with self._lock:
            return [row.rstrip() for row in self.screen.display]

    def text(self) -> str:
        """Everything scrolled off the top and everything visible, one row a line."""
        with self._lock:
            columns = self.screen.columns
            rows = ["".join(line[x].data for x in range(columns)).rstrip() for line in self.screen.history.top]
            rows += [row.rstrip() for row in self.screen.display]
        return "\n".join(rows)

    def wait_for(self, predicate: Callable[[str], bool], timeout: float = SCREEN_TIMEOUT, what: str = "") -> str:
        """Poll the screen (with scrollback) until ``predicate`` accepts it; the text then."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.text()
            if predicate(text):
                return text
            if self.process.poll() is not None and not self._reader.is_alive():
                break
            time.sleep(0.02)
        raise AssertionError(f"timed out waiting for {what or predicate}; screen:\n{self.text()[-3000:]}")

    def wait_exit(self, timeout: float = SCREEN_TIMEOUT) -> int:
        """The child's exit status (and the screen has everything it wrote)."""
        status = self.process.wait(timeout)
        # With no slave left open, the reader gets EOF once it has read everything the child wrote.
        self._close_slave()
        self._reader.join(timeout)
        return status

    def _close_slave(self) -> None:
        if self.slave >= 0:
            os.close(self.slave)
            self.slave = -1

    def modes(self) -> list[int | list[bytes | int]]:
        """The terminal's modes now (``termios.tcgetattr``; on Linux the master reports the slave's)."""
        return termios.tcgetattr(self.master)

    def __enter__(self) -> PtyTerminal:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the child if still running and close the pty."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)
        self._close_slave()
        self._reader.join(2)
        os.close(self.master)


def _take_terminal() -> None:
    """In the child, after ``setsid``: the pty becomes its controlling terminal (so Ctrl-C is a signal when not raw)."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
