"""The front's map of its session hosts: which host runs which session, and where a new one goes.

A session created through the control socket goes to the least-loaded running host and stays there
while that host lives (a hibernated one wakes there again). When a host stops, its sessions are
forgotten here: the next request for one places it afresh, and that host wakes it from the store.
The leases (``store.sqlite.leases``, or PostgreSQL's) make sure no two processes run one session,
whatever this map believes.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

import attrs
import trio

from control.errors import RequestFailed
from actors.platform.daemon.cluster.hosts.link import AttachLink, HostLink, HostUnavailable
from messages import control as c
from messages.codec import Codec
from messages.paths import child_path, split_path
from messages.supervision import ActorSnapshot, TreeNode

__all__ = ["HOSTS", "HostRouter", "host_name", "split_host_path"]

#: The supervisor of the host actors, below the root.
HOSTS = "hosts"
_HOST_PREFIX = "host:"


def host_name(index: int) -> str:
    """A host actor's name: ``host:<index>``."""
    return f"{_HOST_PREFIX}{index}"


def split_host_path(path: str) -> tuple[int, str] | None:
    """``hosts/host:<n>/<rest>`` as ``(n, rest)``; None for a path outside every host."""
    names = split_path(path.strip().strip("/"))
    if len(names) < 2 or names[0] != HOSTS or not names[1].startswith(_HOST_PREFIX):
        return None
    number = names[1][len(_HOST_PREFIX):]
    if not number.isdigit():
        return None
    return int(number), "/".join(names[2:])


@attrs.define
class _Host:
    """A running host, as the router sees it."""

    socket: Path
    link: HostLink
    load: int = 0
    gone: trio.Event = attrs.Factory(trio.Event)


class HostRouter:
    """Placement and links, shared by the front's connections and kept current by the host actors.

    Args:
        encoder, decoder: the control protocol's codecs (client to daemon, and back).
        start_seconds: how long a request waits for a host while none runs.
    """

    def __init__(self, encoder: Codec[c.ClientMessage], decoder: Codec[c.DaemonMessage], start_seconds: float) -> None:
        self.start_seconds = start_seconds
        self.encoder = encoder
        self.decoder = decoder
        self._hosts: dict[int, _Host] = {}
        # Hosts whose process is starting: a request while none serves waits only for these.
        self._starting: set[int] = set()
        self._placed: dict[str, int] = {}
        self._changed = trio.Event()

    # -- kept current by the host actors ----------------------------------------------------------

    def starting(self, index: int) -> None:
        """Host ``index``'s process is starting."""
        self._starting.add(index)

    def up(self, index: int, socket: Path, link: HostLink) -> None:
        """Host ``index`` serves at ``socket``."""
        self._starting.discard(index)
        self._hosts[index] = _Host(socket, link)
        self._changed.set()
        self._changed = trio.Event()

    def down(self, index: int) -> None:
        """Host ``index`` stopped (or failed to start): its sessions are placed afresh when next asked for."""
        self._starting.discard(index)
        host = self._hosts.pop(index, None)
        if host is not None:
            host.gone.set()
        self._placed = {session: host for session, host in self._placed.items() if host != index}
        self._changed.set()
        self._changed = trio.Event()

    # -- placement -------------------------------------------------------------------------------

    def running(self) -> list[int]:
        """The hosts serving now."""
        return sorted(self._hosts)

    def loads(self) -> dict[int, int]:
        """Sessions placed on each running host."""
        return {index: host.load for index, host in sorted(self._hosts.items())}

    def host_of(self, session_id: str) -> int | None:
        """The running host a session was placed on, or None."""
        return self._placed.get(session_id)

    async def place(self, session_id: str | None = None) -> int:
        """The least-loaded running host, counted as loaded with one more session at once (so
        creations in flight spread too); recorded for ``session_id`` when given. While no host runs
        (the daemon starting, a host restarting), it waits for one, up to the hosts' start bound.

        Raises:
            HostUnavailable: no host runs.
        """
        if not await self.wait_for_host(self.start_seconds):
            raise HostUnavailable("no session host is running (restarting, or failed: see `hermes-actors tree`)")
        index = min(self._hosts, key=lambda i: (self._hosts[i].load, i))
        self._hosts[index].load += 1
        if session_id is not None:
            self._placed[session_id] = index
        return index

    def placed(self, session_id: str, index: int) -> None:
        """A session created on ``index`` (already counted by ``place``) lives there."""
        if index in self._hosts:
            self._placed[session_id] = index

    def unplace(self, index: int) -> None:
        """A creation counted by ``place`` failed."""
        host = self._hosts.get(index)
        if host is not None:
            host.load = max(0, host.load - 1)

    def forget(self, session_id: str) -> None:
        """A session deleted: it is placed afresh should it come back."""
        index = self._placed.pop(session_id, None)
        if index is not None:
            self.unplace(index)

    async def wait_gone(self, index: int, seconds: float) -> bool:
        """Wait up to ``seconds`` for host ``index`` to be known stopped; whether it is."""
        host = self._hosts.get(index)
        if host is None:
            return True
        with trio.move_on_after(seconds):
            await host.gone.wait()
        return host.gone.is_set()

    async def wait_for_host(self, seconds: float) -> bool:
        """Wait up to ``seconds`` for some host to be running, while one is starting; whether one runs."""
        with trio.move_on_after(seconds):
            while not self._hosts and self._starting:
                await self._changed.wait()
        return bool(self._hosts)

    # -- talking to a host ---------------------------------------------------------------------

    async def request(self, index: int, message: c.ClientRequest) -> Any:
        """``message`` served by host ``index``: its reply (an ``ErrorReply`` included).

        Raises:
            HostUnavailable: the host is not running, or went away before replying.
        """
        host = self._hosts.get(index)
        if host is None:
            raise HostUnavailable(f"{host_name(index)} is not running")
        return await host.link.request(message)

    @asynccontextmanager
    async def attach_link(self, index: int) -> AsyncIterator[AttachLink]:
        """A link of its own to host ``index``, for one attachment.

        Raises:
            HostUnavailable: the host is not running or cannot be reached.
        """
        host = self._hosts.get(index)
        if host is None:
            raise HostUnavailable(f"{host_name(index)} is not running")
        async with AttachLink.open(host.socket, self.encoder, self.decoder) as link:
            yield link

    async def with_hosts(self, status: c.StatusReply, count: int) -> c.StatusReply:
        """The front's ``status`` with its running hosts' actors, live sessions and running turns added,
        and each of the ``count`` hosts' own figures."""
        actors, live, turns = status.actors, status.live_sessions, status.running_turns
        hosts = []
        for index in range(1, count + 1):
            reply = None
            if index in self._hosts:
                with suppress(HostUnavailable):
                    reply = await self.request(index, c.Status("status"))
            if not isinstance(reply, c.StatusReply):
                hosts.append(c.HostStatus(index, "starting" if index in self._starting else "down"))
                continue
            # A host's root is not an actor of the tree: its node there is the front's host actor.
            actors, live, turns = actors + reply.actors - 1, live + reply.live_sessions, turns + reply.running_turns
            hosts.append(c.HostStatus(index, "running", reply.pid, reply.actors - 1, reply.live_sessions, reply.running_turns))
        return attrs.evolve(status, actors=actors, live_sessions=live, running_turns=turns, hosts=hosts)

    # -- the tree across hosts -------------------------------------------------------------------

    async def graft(self, tree: TreeNode, now: float) -> TreeNode:
        """``tree`` (the front's, or part of it) with each running host's own tree under its host node."""
        if tree.snapshot.kind == "host":
            found = split_host_path(tree.snapshot.path)
            if found is not None and found[0] in self._hosts:
                remote = await self.subtree(found[0], "", now)
                if remote is not None:
                    return attrs.evolve(tree, children=remote.children)
            return tree
        children = [await self.graft(child, now) for child in tree.children]
        return attrs.evolve(tree, children=children)

    async def subtree(self, index: int, path: str, now: float) -> TreeNode | None:
        """Host ``index``'s tree at ``path`` (its root when empty), in the front's paths and clock;
        None when the host went away meanwhile.

        Raises:
            RequestFailed: the host refused the path (``not_found``).
        """
        try:
            reply = await self.request(index, c.Tree("tree", path))
        except HostUnavailable:
            return None
        if isinstance(reply, c.ErrorReply):
            raise RequestFailed(reply.code, reply.message)
        return relocate(reply.tree, index, now - reply.now)


def relocate(node: TreeNode, index: int, shift: float) -> TreeNode:
    """A host's subtree with its paths under ``hosts/host:<index>`` and its times on the front's clock."""
    return TreeNode(relocate_snapshot(node.snapshot, index, shift), [relocate(child, index, shift) for child in node.children])


def relocate_snapshot(snapshot: ActorSnapshot, index: int, shift: float) -> ActorSnapshot:
    """One host snapshot in the front's paths and clock (see ``relocate``)."""
    prefix = child_path(HOSTS, host_name(index))
    started = snapshot.started_at + shift if math.isfinite(snapshot.started_at) else snapshot.started_at
    return attrs.evolve(snapshot, path=child_path(prefix, snapshot.path), started_at=started)
