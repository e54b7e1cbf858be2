"""The ``control`` actor: the Unix-socket server CLI clients talk to.

It binds ``run/control.sock`` (see :mod:`actors.platform.daemon.control.socket_file`), checks
each peer's uid, and runs one :class:`~actors.platform.daemon.control.connection.Connection`
actor per client under itself (``control/conn:<n>``). A connection that fails
is logged and forgotten; it never takes the server down. At most
``daemon.max_connections`` clients are served at once: one more is sent a
``busy`` error frame and closed at once, so clients can never hold enough
descriptors to starve the sessions' tools.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import trio

from actors import Actor, ActorBase, ActorFailed
from actors.platform.daemon.control.connection import Connection
from actors.platform.daemon.control.socket_file import bind_control_socket, remove_control_socket
from control.paths import DaemonPaths
from actors.platform.daemon.control.service import ControlService
from config.daemon import DaemonConfig
from messages import control as c
from messages.codec import Codec
from messages.sockets import peer_in_jail, peer_uid
from messages.supervision import ActorState

__all__ = ["ControlServer"]

log = logging.getLogger("hermes_actors.control")

#: The daemon's own frames may be large (a tree of 10,000 actors); clients accept up to this.
DAEMON_FRAME_LIMIT = 256 * 1024 * 1024
#: The longest the accept loop waits to hand a refused client its error frame (a fresh socket's
#: buffer takes it at once; this only bounds the impossible case).
REFUSAL_SEND_SECONDS = 0.5


class ControlServer(Actor[None]):
    """Accepts control connections on the daemon's socket.

    Args:
        paths: the daemon's files (where the socket goes).
        service: what the connections' requests are served by.
        config: the ``daemon`` section (frame limit, per-client buffer, connection cap, frame timeout).
    """

    kind = "control"

    def __init__(self, paths: DaemonPaths, service: ControlService, config: DaemonConfig) -> None:
        super().__init__()
        self._paths = paths
        self._service = service
        self._config = config
        self._client_codec: Codec[c.ClientMessage] = Codec(c.ClientMessage, max_frame_bytes=config.max_frame_bytes)
        self._daemon_codec: Codec[c.DaemonMessage] = Codec(c.DaemonMessage, max_frame_bytes=DAEMON_FRAME_LIMIT)
        self._listener: trio.socket.SocketType | None = None
        self._accepted = 0
        self._refused = 0
        self._over_cap = 0
        self._failed = 0
        # Invariant: clients admitted and not yet gone (counted before their actor is ready, so two
        # clients accepted together cannot both pass the cap).
        self._open = 0

    def snapshot_details(self) -> dict[str, Any]:
        return {
            "socket": str(self._paths.socket),
            "accepted": self._accepted,
            "refused_peers": self._refused,
            "refused_over_cap": self._over_cap,
            "max_connections": self._config.max_connections,
            "failed_connections": self._failed,
            "open": self.open_connections(),
        }

    def open_connections(self) -> int:
        """Connections currently served."""
        return self._open

    async def on_start(self) -> None:
        self._listener = await bind_control_socket(self._paths)
        log.info("control socket listening on %s", self._paths.socket)

    async def on_stop(self) -> None:
        if self._listener is not None:
            self._listener.close()
        remove_control_socket(self._paths)

    async def main(self) -> None:
        assert self._listener is not None
        self.state = ActorState.RUNNING
        # trio's loop: it survives running out of descriptors (EMFILE, ENFILE) by waiting a moment.
        await trio.serve_listeners(self._serve_client, [trio.SocketListener(self._listener)])

    async def _serve_client(self, stream: trio.SocketStream) -> None:
        """Admit one client and serve it until its connection actor ends (``serve_listeners`` closes
        the stream when this returns)."""
        sock = stream.socket
        uid = peer_uid(sock)
        if uid is not None and uid != os.getuid():
            self._refused += 1
            log.warning("refused a control connection from uid %s", uid)
            return
        if peer_in_jail(sock):
            # A tool's process (of this daemon or another) that found the socket: never the operator.
            self._refused += 1
            log.warning("refused a control connection from a jailed process")
            return
        if self._open >= self._config.max_connections:
            await self._refuse_over_cap(stream)
            return
        self._open += 1
        try:
            self._accepted += 1
            connection = Connection(
                stream,
                self._service,
                self._client_codec,
                self._daemon_codec,
                self._config.subscriber_buffer,
                self.open_connections,
                self._config.frame_timeout_seconds,
            )
            handle = await self.spawn(connection, f"conn:{self._accepted}", on_failure=self._connection_failed)
            await handle.wait_stopped()
        finally:
            self._open -= 1

    async def _refuse_over_cap(self, stream: trio.SocketStream) -> None:
        self._over_cap += 1
        cap = self._config.max_connections
        if self._over_cap == 1 or self._over_cap % 100 == 0:  # a flood logs a line per hundred, not per client
            log.warning("refused a control connection: %d are open (daemon.max_connections=%d); %d refused so far",
                        self.open_connections(), cap, self._over_cap)
        refusal = self._daemon_codec.encode(c.ErrorReply("busy", f"too many connections (daemon.max_connections={cap})"))
        with trio.move_on_after(REFUSAL_SEND_SECONDS):
            try:
                await stream.send_all(refusal)
            except (trio.BrokenResourceError, OSError):
                pass  # the client is gone already

    def _connection_failed(self, connection: ActorBase, failure: ActorFailed) -> None:
        self._failed += 1
        log.error("%s failed: %s", connection.path, failure)
