"""The peer link between daemons sharing a PostgreSQL store: requests for a session another daemon runs
are forwarded to it, and its events relayed back (docs/DECISIONS.md#d-session-hosts).

A daemon with ``daemon.cluster_listen`` accepts peers on TCP (the ``cluster`` actor). A peer proves it
knows the shared secret (``HERMES_ACTORS_CLUSTER_SECRET``) before anything else: the listener sends a
random nonce, the peer answers with its HMAC-SHA256 under the secret; a wrong or late answer closes the
connection (and is logged). After that the link speaks the control protocol, served by the same
``Connection`` actor as a local client, except that a request arriving from a peer is never forwarded
again (a stale registry could otherwise bounce it between daemons).

The handshake is ``handshake``'s; the forwarding side is ``forwarding``'s.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from actors import Actor, ActorBase, ActorFailed
from actors.platform.daemon.control.connection import Connection
from actors.platform.daemon.control.service import ControlService
from actors.platform.daemon.cluster.handshake import PeerAuthFailed, challenge
from actors.platform.daemon.cluster.forwarding import REPLY_FRAME_LIMIT
from config.daemon import DaemonConfig
from messages import control as c
from messages.codec import Codec
from messages.supervision import ActorState

__all__ = ["PeerListener"]

log = logging.getLogger("hermes_actors.cluster")


class PeerListener(Actor[None]):
    """Accepts peer daemons at ``daemon.cluster_listen`` (path ``cluster``; each peer ``cluster/peer:<n>``).

    Args:
        service: serves the peers' requests (as a local client's).
        config: the ``daemon`` section.
        secret: the shared secret.
        advertise: told the address peers reach this daemon at, once it listens.
    """

    kind = "cluster"

    def __init__(
        self, service: ControlService, config: DaemonConfig, secret: bytes,
        advertise: Callable[[str], Awaitable[None]],
    ) -> None:
        super().__init__()
        self._service = service
        self._config = config
        self._secret = secret
        self._advertise = advertise
        self._client_codec: Codec[c.ClientMessage] = Codec(c.ClientMessage, max_frame_bytes=config.max_frame_bytes)
        self._daemon_codec: Codec[c.DaemonMessage] = Codec(c.DaemonMessage, max_frame_bytes=REPLY_FRAME_LIMIT)
        self._listeners: list[trio.SocketListener] = []
        self.address = ""
        self._accepted = 0
        self._refused = 0

    def snapshot_details(self) -> dict[str, Any]:
        peers = self._service.peers
        return {
            "address": self.address, "peers_accepted": self._accepted, "peers_refused": self._refused,
            "forwarded": peers.forwarded if peers is not None else 0,
            "owners_remembered": peers.remembered() if peers is not None else 0,
        }

    async def on_start(self) -> None:
        assert self._config.cluster_listen is not None
        host, _, port = self._config.cluster_listen.rpartition(":")
        self._listeners = await trio.open_tcp_listeners(int(port), host=host)
        bound = self._listeners[0].socket.getsockname()
        self.address = self._config.cluster_advertise or f"{host}:{bound[1]}"
        await self._advertise(self.address)
        log.info("peer link listening on %s:%d (advertised as %s)", host, bound[1], self.address)

    async def on_stop(self) -> None:
        for listener in self._listeners:
            await listener.aclose()
        if self._service.peers is not None:
            self._service.peers.close_idle()

    async def main(self) -> None:
        self.state = ActorState.RUNNING
        # trio's loop: it survives running out of descriptors (EMFILE, ENFILE) by waiting a moment, and
        # runs each handshake in a task of its own, so a peer slow to prove itself holds up nobody else.
        await trio.serve_listeners(self._admit, self._listeners)

    async def _admit(self, stream: trio.SocketStream) -> None:
        """Prove the peer, then serve it until its connection actor ends (``serve_listeners`` closes
        the stream when this returns)."""
        try:
            await challenge(stream, self._secret)
        except (PeerAuthFailed, trio.BrokenResourceError, OSError) as exc:
            self._refused += 1
            log.warning("refused a peer from %s: %s", _peer_name(stream), exc)
            return
        self._accepted += 1
        connection = Connection(
            stream, self._service, self._client_codec, self._daemon_codec, self._config.subscriber_buffer,
            lambda: len(self.children()), self._config.frame_timeout_seconds, forwards=False,
        )
        handle = await self.spawn(connection, f"peer:{self._accepted}", on_failure=self._peer_failed)
        await handle.wait_stopped()

    def _peer_failed(self, peer: ActorBase, failure: ActorFailed) -> None:
        log.warning("peer connection %s failed: %s", peer.path, failure)


def _peer_name(stream: trio.SocketStream) -> str:
    try:
        host, port = stream.socket.getpeername()[:2]
    except OSError:
        return "an unknown address"
    return f"{host}:{port}"
