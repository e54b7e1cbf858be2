"""Attachments a control connection relays from elsewhere: a peer daemon's session, or a session host's.

Each runs as a task of the client's connection, started with ``nursery.start``: the client's
``Attached`` (or the error) is sent before ``start`` returns, and the events follow until the client
detaches (which cancels the relay's scope) or the other side goes away.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import attrs
import trio

from actors.platform.daemon.cluster.hosts.placement import HostRouter, host_name
from control.errors import RequestFailed
from messages import control as c
from messages.events import StatusUpdate, SubscriberDropped
from messages.paths import session_path

if TYPE_CHECKING:
    from actors.platform.daemon.control.connection import Connection
    from actors.platform.daemon.cluster.forwarding import PeerRouter

__all__ = ["HOST_GONE_SECONDS", "RemoteAttachment", "relay_host", "relay_peer"]

log = logging.getLogger("hermes_actors.control")

#: How long a relay whose host link closed waits to learn whether the host is gone (or closed it itself).
HOST_GONE_SECONDS = 5.0


@attrs.define
class RemoteAttachment:
    """An attachment relayed from ``source`` (a peer's address, a host's name): detaching cancels the
    relay, which closes its link."""

    source: str

    def close(self) -> None:
        """Nothing to close here: the relay's scope is cancelled with it."""


async def relay_peer(
    connection: Connection, peers: PeerRouter, request: c.Attach, address: str, *, task_status: trio.TaskStatus[None]
) -> None:
    """Attach through the daemon at ``address`` that runs the session, and pass its events on."""
    async with peers.link(address) as link:
        await link.send(request)
        reply = await link.reply_to(request.request_id)
        if not isinstance(reply, c.Attached):
            connection.send(reply)
            task_status.started()
            return
        with connection.attachment(reply.session_id, RemoteAttachment(address)):
            connection.send(reply)
            task_status.started()
            last: Any = None
            try:
                while True:
                    last = await link.receive()
                    await connection.send_event(last)
            except RequestFailed as exc:
                log.info("%s: the relay of %s ended: %s", connection.path, reply.session_id, exc)
                # Told as a local session tells its subscribers when it stops.
                await connection.send_event(SubscriberDropped(
                    session_id=reply.session_id, seq=getattr(last, "seq", 0), path=getattr(last, "path", ""),
                    reason=f"the daemon running the session went away ({exc})",
                ))


async def relay_host(
    connection: Connection, router: HostRouter, request: c.Attach, index: int, *, task_status: trio.TaskStatus[None]
) -> None:
    """Attach through the session's host and pass its frames on as they come, never decoded. When the
    host goes away, the client is told, and the session is attached again wherever it is placed next
    (it wakes from the store there)."""
    started = False
    with connection.attachment(request.session_id, RemoteAttachment(host_name(index))):
        try:
            while True:
                async with router.attach_link(index) as link:
                    reply = await link.attach(request)
                    if not started:
                        connection.send(reply)
                        task_status.started()
                        started = True
                    if not isinstance(reply, c.Attached):
                        return
                    async for frame in link.frames():
                        await connection.send_frame(frame)
                if not await router.wait_gone(index, HOST_GONE_SECONDS):
                    return  # the host is up and closed this link itself (it said why in its last frame)
                index = await _host_after_loss(connection, router, request.session_id, index)
                request = attrs.evolve(request, since=None)
        except RequestFailed as exc:
            if not started:
                raise  # the client is answered with the error
            await connection.send_event(SubscriberDropped(
                session_id=request.session_id, path=session_path(request.session_id),
                reason=f"the session's host went away and it could not be attached again ({exc})",
            ))


async def _host_after_loss(connection: Connection, router: HostRouter, session_id: str, lost: int) -> int:
    """The host to attach to again once host ``lost`` went away, the client told of the move.

    Raises:
        HostUnavailable: no host came back within the hosts' start bound.
    """
    log.info("%s: %s went away under an attachment to %s", connection.path, host_name(lost), session_id)
    await connection.send_event(StatusUpdate(
        session_id=session_id, path=session_path(session_id), kind="host_lost",
        text=f"the session's host ({host_name(lost)}) went away; attached again (the session resumes from the store)",
    ))
    placed = router.host_of(session_id)
    return placed if placed is not None else await router.place(session_id)
