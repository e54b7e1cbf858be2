"""Session leases between the processes of one daemon sharing one SQLite file (``daemon.hosts``).

A lease is an exclusive ``flock`` on ``run/leases/<session id>.lease``, held on a descriptor this
process keeps open while it runs the session. The kernel drops it when the descriptor closes, so a
lease dies with its holder, ``kill -9`` included: no expiry and no heartbeat to tune. The file also
names its holder (``front``, ``host:1`` ...), which is only a hint for the error: a name left by a
holder that released its lease is never trusted for anything else.

The calls are a handful of syscalls on a local, private directory (an open, a non-blocking ``flock``
and a short write), so they run on the event loop.
"""

from __future__ import annotations

import fcntl
import os
import re
from collections.abc import Callable
from pathlib import Path

from store.errors import SessionOwnedElsewhere, StoreIOError
from store.leases import LeaseLost

__all__ = ["FileLeases"]

# Session ids are generated (hex and dashes); anything else must never become a path.
_SAFE_ID = re.compile(r"[A-Za-z0-9_.:-]{1,200}")


class FileLeases:
    """Leases held as ``flock`` locks in ``directory`` by the process calling itself ``holder``.

    Args:
        directory: private (0700) directory of the lease files; created when missing.
        holder: this process's name, written into the files it holds (``host:<n>`` is where the
            front forwards to).
    """

    def __init__(self, directory: Path, holder: str) -> None:
        self.directory = directory
        # Not ``self.holder``: that name is the SessionLeases method, which an attribute would shadow.
        self._holder_name = holder
        self._held: dict[str, int] = {}

    def _path(self, session_id: str) -> Path:
        if not _SAFE_ID.fullmatch(session_id) or session_id in (".", ".."):
            raise StoreIOError(f"not a session id: {session_id!r}")
        return self.directory / f"{session_id}.lease"

    async def acquire(self, session_id: str) -> None:
        """See ``SessionLeases.acquire``; the holder's name is in the error."""
        if session_id in self._held:
            return
        path = self._path(session_id)
        try:
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        except OSError as exc:
            raise StoreIOError(f"cannot open the lease of session {session_id}: {exc}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            raise SessionOwnedElsewhere(
                f"session {session_id} runs in another process of this daemon ({holder or 'unknown'})",
                address=holder or None,
            ) from None
        except OSError as exc:
            os.close(fd)
            raise StoreIOError(f"cannot lock the lease of session {session_id}: {exc}") from exc
        os.ftruncate(fd, 0)
        os.pwrite(fd, self._holder_name.encode(), 0)
        self._held[session_id] = fd

    async def release(self, session_id: str) -> None:
        """See ``SessionLeases.release``. The file stays: unlinking it could let a process that opened
        it just before lock a file no longer at the path, while a third locks a new one."""
        fd = self._held.pop(session_id, None)
        if fd is not None:
            os.close(fd)

    def held(self) -> frozenset[str]:
        """See ``SessionLeases.held``."""
        return frozenset(self._held)

    async def holder(self, session_id: str) -> str | None:
        """None: the daemon's front routes to its hosts itself (``actors.platform.daemon.cluster.hosts``)."""
        return None

    async def less_loaded_peer(self) -> str | None:
        """None: the front places its hosts' sessions itself."""
        return None

    def on_released(self, callback: Callable[[str], None]) -> None:
        """Never called: the front knows where its hosts' sessions run."""

    def on_lost(self, callback: LeaseLost) -> None:
        """Never called: a lock held on an open descriptor cannot be lost while the process lives."""

    async def advertise(self, address: str) -> None:
        """Nothing to record: the holder's name is in each lease file."""


def _read_holder(fd: int) -> str:
    try:
        return os.pread(fd, 64, 0).decode("utf-8", "replace").strip()
    except OSError:
        return ""
