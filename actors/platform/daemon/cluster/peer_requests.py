"""Which control requests a daemon hands to a peer daemon before trying them itself (``daemon.cluster_listen``).

A request naming a session is forwarded when the session's lease holder is another daemon (see
``Connection._elsewhere``, which catches the refusal). Two kinds never reach a refusal, and are
decided here: a new session goes to a peer holding fewer leases than this daemon (ties stay here), and
a path (``kill``, ``inspect``, ``tree``, ``steer``) naming a session that is not live here goes to the
daemon holding its lease.
"""

from __future__ import annotations

from actors.platform.daemon.control.service import ControlService
from messages import control as c
from messages import paths

__all__ = ["peer_for", "session_of_request"]

_BY_PATH = (c.Inspect, c.Kill, c.SteerSession, c.Tree)


def session_of_request(message: c.ClientRequest) -> str | None:
    """The session a request names (by id, or by a path in it), if any; a bare path's first name may
    not be a session at all, which a lookup by it finds out."""
    session_id = getattr(message, "session_id", None)
    if isinstance(session_id, str):
        return session_id
    if isinstance(message, _BY_PATH):
        path = message.path.strip().strip("/")
        return paths.session_named(path) if path else None
    return None


async def peer_for(service: ControlService, message: c.ClientRequest) -> str | None:
    """The address of the peer daemon that should serve ``message``, or None to serve it here.

    Raises:
        StoreError: the database cannot be asked.
    """
    store = service.store
    if store is None:
        return None
    leases = store.leases
    if isinstance(message, c.CreateSession):
        return await leases.less_loaded_peer()
    session_id = session_of_request(message)
    if not isinstance(message, _BY_PATH) or session_id is None or message.path.strip().strip("/") in service.system.registry:
        return None
    if service.is_live(session_id):
        return None
    return await leases.holder(session_id)
