"""The OS plumbing of the project's Unix sockets, for both of them: the daemon's control socket
and a sandbox's RPC socket.

- :data:`MAX_SOCKET_PATH_BYTES`: the longest path a Unix socket may have;
- :func:`listen_private`: listen on a new socket, mode 0600, in a directory the caller made private;
  :func:`bind_private_listener`, the same from Trio;
- :func:`peer_uid`: who is at the other end, as the kernel says;
- :func:`peer_in_jail`: whether the other end is a jailed process (the control socket refuses those);
- :func:`request_id_of`: the request a refused frame named, so its error can be matched.

Trio is imported only where a socket is bound: the Trio-free CLI reads the path limit from here.
"""

from __future__ import annotations

import os
import socket
import struct
import sys
from typing import TYPE_CHECKING, Protocol

from messages.untrusted import loads as loads_untrusted

if TYPE_CHECKING:
    import trio

__all__ = [
    "MAX_SOCKET_PATH_BYTES", "SocketPathTooLong", "bind_private_listener", "listen_private", "peer_in_jail", "peer_uid",
    "request_id_of",
]  # fmt: skip

#: sun_path holds 108 bytes on Linux (104 on macOS) including the final NUL.
MAX_SOCKET_PATH_BYTES = 103


class SocketPathTooLong(OSError):
    """The path does not fit a Unix socket address (:data:`MAX_SOCKET_PATH_BYTES`)."""


class _SocketOptions(Protocol):
    """A socket as :func:`peer_uid` uses it: the standard library's or Trio's."""

    def getsockopt(self, level: int, option: int, buflen: int, /) -> bytes:
        """The raw value of a socket option."""
        ...


def listen_private(path: str, backlog: int) -> socket.socket:
    """Listen on a new Unix socket at ``path`` with mode 0600 (blocking: the bind walks the path).

    The directory must already be private (0700, ours): that is what keeps the socket out of
    others' reach between bind and chmod. (A umask would not do: it is process-wide, and would
    strip permissions from files other threads create meanwhile.)

    Raises:
        SocketPathTooLong: ``path`` is longer than a socket address holds.
        OSError: the socket cannot be bound or listened on.
    """
    if len(os.fsencode(path)) > MAX_SOCKET_PATH_BYTES:
        raise SocketPathTooLong(f"socket path too long for a Unix socket: {path}")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(path)
        os.chmod(path, 0o600)
        sock.listen(backlog)
    except OSError:
        sock.close()
        raise
    return sock


async def bind_private_listener(path: str, backlog: int) -> trio.socket.SocketType:
    """:func:`listen_private` in a worker thread, as a Trio socket.

    Raises:
        SocketPathTooLong: ``path`` is longer than a socket address holds.
        OSError: the socket cannot be bound or listened on.
    """
    import trio

    return trio.socket.from_stdlib_socket(await trio.to_thread.run_sync(listen_private, path, backlog))


def peer_uid(sock: _SocketOptions) -> int | None:
    """The uid of the process at the other end of a connected Unix socket, None if unknown here."""
    if sys.platform.startswith("linux"):
        return _peer_credentials(sock)[1]
    if sys.platform == "darwin":
        # struct xucred {u_int version; uid_t uid; short ngroups; gid_t groups[16];} via LOCAL_PEERCRED.
        creds = sock.getsockopt(0, 0x001, struct.calcsize("IIh16I"))
        return int(struct.unpack_from("II", creds)[1])
    return None


def _peer_credentials(sock: _SocketOptions) -> tuple[int, int]:
    """(pid, uid) of the peer of a connected Unix socket (Linux); pid 0 when it is not in our PID namespace."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, _ = struct.unpack("3i", creds)
    return int(pid), int(uid)


def peer_in_jail(sock: _SocketOptions) -> bool:
    """Whether the peer of a connected Unix socket runs in a user or PID namespace nested in ours: a jail.

    A jail of any daemon (of any home) runs in namespaces of its own, so this tells a jailed process
    from the user's own client whatever socket path it found. A peer from an enclosing namespace (the
    host, talking to a daemon in a container) is not visible here (pid 0) and is not a jail. A peer
    whose namespaces cannot be read (gone already) counts as jailed. Linux only; False elsewhere.
    """
    if not sys.platform.startswith("linux"):
        return False
    pid, _ = _peer_credentials(sock)
    if pid == 0:
        return False
    try:
        return any(os.readlink(f"/proc/{pid}/ns/{k}") != os.readlink(f"/proc/self/ns/{k}") for k in ("user", "pid"))
    except OSError:
        return True


def request_id_of(frame: bytes, field: str) -> object:
    """The ``field`` of a frame the codec refused, so the refusal can name the request it answers.

    The frame may be hostile JSON (deep nesting, a huge integer): that only means there is no id
    (None). The caller checks the value's type.
    """
    try:
        payload = loads_untrusted(frame)
    except ValueError:
        return None
    return payload.get(field) if isinstance(payload, dict) else None
