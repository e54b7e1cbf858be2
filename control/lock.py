"""The single-instance lock: one daemon per HERMES_ACTORS_HOME.

An ``fcntl`` lock on ``run/daemon.lock`` is released by the kernel when its
holder dies, however it dies, so a crashed daemon never blocks the next one.
The holder writes its pid into the file, for the error a second daemon shows.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from control.errors import DaemonAlreadyRunning

__all__ = ["FileLock", "InstanceLock"]


class FileLock:
    """An exclusive ``flock`` on one file, held until :meth:`release` or process exit."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        """True while this object holds the lock."""
        return self._fd is not None

    def acquire_nowait(self) -> bool:
        """Take the lock if it is free; False if another process holds it."""
        if self._fd is not None:
            return True
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def acquire(self) -> None:
        """Take the lock, waiting for its holder to release it (blocking: not for the Trio loop)."""
        if self._fd is not None:
            return
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        self._fd = fd

    def release(self) -> None:
        """Release the lock (idempotent)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def write_text(self, text: str) -> None:
        """Replace the locked file's content (the lock must be held)."""
        assert self._fd is not None
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, text.encode(), 0)


class InstanceLock(FileLock):
    """The daemon's lock: taking it fails with a clear error when another daemon runs."""

    def __init__(self, path: Path, home: Path) -> None:
        super().__init__(path)
        self.home = home

    def take(self) -> None:
        """Take the lock and record our pid.

        Raises:
            DaemonAlreadyRunning: another daemon holds it.
        """
        if not self.acquire_nowait():
            raise DaemonAlreadyRunning(str(self.home), _read_pid(self.path))
        self.write_text(f"{os.getpid()}\n")


def _read_pid(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
