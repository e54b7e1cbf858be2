"""Where the daemon keeps its files under HERMES_ACTORS_HOME, shared by the daemon and the CLI.

Imports neither Trio nor the SDKs: the CLI resolves the socket path with it
before it knows whether a daemon runs.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import attrs

from control.profiles import Profile
from messages.sockets import MAX_SOCKET_PATH_BYTES
from messages.user_dir import find_user_dir

__all__ = ["HOME_VARIABLE", "DaemonPaths", "ensure_private_dir", "home_from_env"]

#: The environment variable naming the home directory.
HOME_VARIABLE = "HERMES_ACTORS_HOME"


def home_from_env() -> Path:
    """The selected profile's home: ``HERMES_ACTORS_HOME`` (or ``~/.hermes-actors`` when unset), or its
    ``profiles/NAME`` when ``HERMES_ACTORS_PROFILE`` names a profile (see :mod:`control.profiles`; without
    importing the configuration classes, so the CLI starts fast).

    Raises:
        ProfileError: ``HERMES_ACTORS_PROFILE`` holds a bad name.
    """
    return Profile.from_env().home


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) if needed and make it 0700, owned by us.

    Raises:
        PermissionError: it exists and belongs to another user.
    """
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    info = path.stat()
    if info.st_uid != os.getuid():
        raise PermissionError(f"{path} belongs to uid {info.st_uid}, not to us")
    if info.st_mode & 0o777 != 0o700:
        os.chmod(path, 0o700)
    return path


def _absolute(path: str | os.PathLike[str]) -> Path:
    return Path(path).expanduser().absolute()


@attrs.frozen
class DaemonPaths:
    """The daemon's files for one home directory.

    Attributes:
        home: HERMES_ACTORS_HOME.
    """

    home: Path = attrs.field(converter=_absolute)

    @property
    def run_dir(self) -> Path:
        """Private runtime directory: socket, lock, pid, socket-path record."""
        return self.home / "run"

    @property
    def lock_file(self) -> Path:
        """Held (fcntl) by the one running daemon."""
        return self.run_dir / "daemon.lock"

    @property
    def start_lock_file(self) -> Path:
        """Held by a client while it starts a daemon in the background."""
        return self.run_dir / "start.lock"

    @property
    def pid_file(self) -> Path:
        """The running daemon's pid (informational; the lock is the truth)."""
        return self.run_dir / "daemon.pid"

    @property
    def socket_record(self) -> Path:
        """Holds the fallback socket path when the usual one is too long."""
        return self.run_dir / "control.sock.path"

    @property
    def user_dir_record(self) -> Path:
        """Holds the per-user directory the daemon claimed (see :mod:`messages.user_dir`)."""
        return self.run_dir / "user-dir.path"

    @property
    def user_dir(self) -> Path:
        """The per-user directory: the recorded one, else where a first start would make it (reads the
        disk)."""
        return Path(find_user_dir(self.user_dir_record))

    @property
    def log_dir(self) -> Path:
        """Where a daemon started in the background logs."""
        return self.home / "logs"

    @property
    def log_file(self) -> Path:
        """The background daemon's log."""
        return self.log_dir / "daemon.log"

    @property
    def preferred_socket(self) -> Path:
        """``run/control.sock``: the socket when its path fits."""
        return self.run_dir / "control.sock"

    @property
    def home_digest(self) -> str:
        """16 hex digits of the home's path: its sockets' names in the per-user directory."""
        return hashlib.sha256(os.fsencode(self.home)).hexdigest()[:16]

    @property
    def fallback_socket(self) -> Path:
        """A short private path for homes too deep for a Unix socket path: in the per-user directory.

        The daemon records that directory in the home, so every client finds it without talking first
        (reads the disk).
        """
        return self.user_dir / f"{self.home_digest}.sock"

    @property
    def socket(self) -> Path:
        """The control socket's path: the preferred one, or the fallback when too long."""
        if len(os.fsencode(self.preferred_socket)) <= MAX_SOCKET_PATH_BYTES:
            return self.preferred_socket
        return self.fallback_socket
