"""Which control requests the front hands to a session host, and how the host's replies read at the front.

The front serves what is its own: the tree's upper part, status, stored sessions (list, search, show,
export), cron, MCP, pairing, and the sessions it runs itself (those of the HTTP API, the platforms and
cron). A request naming any other session, by id, title or path, goes to the host the session is
placed on (``HostRouter``); a new session goes to the least-loaded host. A path under
``hosts/host:<n>/`` goes to host ``n`` with that prefix taken off, and the host's paths in its reply
get it back.
"""

from __future__ import annotations

from typing import Any

import attrs
import trio

from actors.platform.daemon.control.service import ControlService
from actors.platform.daemon.cluster.hosts.placement import HostRouter, relocate, relocate_snapshot, split_host_path
from messages import control as c
from messages.paths import session_named

__all__ = ["host_for", "localize"]

_BY_SESSION_ID = (
    c.Attach, c.SendMessage, c.InterruptSession, c.CompressSession, c.ResetSessionTools, c.SetSessionYolo,
    c.AnswerSessionRequest,
)
_BY_PATH = (c.Inspect, c.Kill, c.SteerSession, c.Tree)


async def host_for(
    service: ControlService, router: HostRouter, message: c.ClientRequest
) -> tuple[int, c.ClientRequest] | None:
    """The host that serves ``message``, and the message as that host must see it; None: the front serves it.

    Raises:
        RequestFailed: ``not_found`` for a session no one knows, ``unavailable`` when no host runs.
    """
    if isinstance(message, c.CreateSession):
        return await router.place(), message
    if isinstance(message, _BY_SESSION_ID):
        session_id = await _routed_session(service, router, message.session_id)
        if session_id is None:
            return None
        index = router.host_of(session_id)
        if index is None:
            index = await router.place(session_id)
        return index, attrs.evolve(message, session_id=session_id)
    if isinstance(message, c.DeleteSession):
        index = router.host_of(message.session_id)
        return None if index is None else (index, message)
    if isinstance(message, _BY_PATH) and message.path.strip("/ "):
        return _by_path(service, router, message)
    return None


async def _routed_session(service: ControlService, router: HostRouter, ref: str) -> str | None:
    """The id of the session ``ref`` (an id or a title) names, or None when the front runs it itself."""
    if service.is_live(ref):
        return None
    if router.host_of(ref) is not None:
        return ref
    session_id = await service.session_id_for(ref)
    return None if service.is_live(session_id) else session_id


def _by_path(
    service: ControlService, router: HostRouter, message: c.Inspect | c.Kill | c.SteerSession | c.Tree
) -> tuple[int, c.ClientRequest] | None:
    path = message.path.strip().strip("/")
    in_host = split_host_path(path)
    if in_host is not None:
        host, rest = in_host
        return (host, attrs.evolve(message, path=rest)) if rest else None
    if path in service.system.registry:
        return None
    session_id = session_named(path)
    if service.is_live(session_id):
        return None
    index = router.host_of(session_id)
    return None if index is None else (index, message)


def localize(router: HostRouter, index: int, request: Any, reply: Any) -> Any:
    """Host ``index``'s ``reply`` to ``request`` as the front's client must read it (paths and clock the
    front's), noting at the router what it says of placement."""
    if isinstance(reply, c.SessionCreated):
        router.placed(reply.session_id, index)
    elif isinstance(request, c.CreateSession):
        router.unplace(index)
    elif isinstance(request, c.DeleteSession) and isinstance(reply, c.Ok):
        router.forget(request.session_id)
    elif isinstance(reply, c.InspectReply):
        now = trio.current_time()
        return attrs.evolve(reply, snapshot=relocate_snapshot(reply.snapshot, index, now - reply.now), now=now)
    elif isinstance(reply, c.TreeReply):
        now = trio.current_time()
        return attrs.evolve(reply, tree=relocate(reply.tree, index, now - reply.now), now=now)
    return reply
