"""The control socket's file: bound private, stale ones cleaned, removed at the end.

Binding and peer checks are the shared plumbing of :mod:`messages.sockets`.

Only the daemon holding the instance lock calls :func:`bind_control_socket`, so
a socket file found at the path is a dead daemon's leftover and is removed.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import trio

from control.errors import SocketSetupError
from control.paths import DaemonPaths, ensure_private_dir
from messages.sockets import bind_private_listener

__all__ = ["LISTEN_BACKLOG", "bind_control_socket", "remove_control_socket"]

log = logging.getLogger("hermes_actors.control")

#: Large, because Trio's connect mishandles EAGAIN when a Unix listener's backlog is full;
#: the kernel caps it at net.core.somaxconn.
LISTEN_BACKLOG = 4096


def _remove_stale(path: Path) -> None:
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(info.st_mode):
        raise SocketSetupError(f"{path} exists and is not a socket; remove it by hand")
    log.info("removing stale control socket %s", path)
    path.unlink()


async def bind_control_socket(paths: DaemonPaths) -> trio.socket.SocketType:
    """Listen on the control socket: 0600, in a 0700 directory, with a large backlog.

    When the usual path is too long, the short fallback path is used and
    recorded in ``run/control.sock.path``.

    Raises:
        SocketSetupError: the directory cannot be made private or the socket bound.
    """
    path = paths.socket
    try:
        ensure_private_dir(paths.run_dir)
        # A host's record is in run/hosts, which its socket in the per-user directory does not make.
        ensure_private_dir(paths.socket_record.parent)
        ensure_private_dir(path.parent)
        _remove_stale(path)
        if path != paths.preferred_socket:
            paths.socket_record.write_text(f"{path}\n")
    except OSError as exc:
        raise SocketSetupError(f"cannot prepare {path.parent}: {exc}") from exc
    try:
        return await bind_private_listener(os.fspath(path), LISTEN_BACKLOG)
    except OSError as exc:
        raise SocketSetupError(f"cannot listen on {path}: {exc}") from exc


def remove_control_socket(paths: DaemonPaths) -> None:
    """Remove the socket file and its path record (idempotent)."""
    for leftover in (paths.socket, paths.socket_record):
        try:
            leftover.unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            log.warning("could not remove %s: %s", leftover, exc)
