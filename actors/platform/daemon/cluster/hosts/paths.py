"""Where a session-host process of the daemon keeps its socket: ``run/hosts/host-<n>.sock``."""

from __future__ import annotations

from pathlib import Path

import attrs

from control.paths import DaemonPaths

__all__ = ["HostPaths"]


@attrs.frozen
class HostPaths(DaemonPaths):
    """The files of host ``index`` of the daemon of ``home``: its socket, which only the front connects to.

    Attributes:
        index: the host's number (``hosts/host:<index>``).
    """

    index: int = 0

    @property
    def hosts_dir(self) -> Path:
        """The hosts' private directory under ``run``."""
        return self.run_dir / "hosts"

    @property
    def preferred_socket(self) -> Path:
        """``run/hosts/host-<n>.sock``: the socket when its path fits."""
        return self.hosts_dir / f"host-{self.index}.sock"

    @property
    def fallback_socket(self) -> Path:
        """A short private path for homes too deep for a Unix socket path (see ``DaemonPaths``)."""
        return self.user_dir / f"{self.home_digest}-host-{self.index}.sock"

    @property
    def socket_record(self) -> Path:
        """Holds the fallback socket path when the usual one is too long."""
        return self.hosts_dir / f"host-{self.index}.sock.path"
