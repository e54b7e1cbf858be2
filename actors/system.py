"""One running actor tree: :func:`open_actor_system` runs a root supervisor for the duration of a
block and hands back the :class:`ActorSystem` (registry, lookup by path, the tree snapshot)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import attrs
import trio

from actors.handle import ActorHandle
from actors.registry import ActorRegistry
from messages.supervision import TreeNode
from supervisor import ChildSpec, Strategy, Supervisor, SupervisorHandle

__all__ = ["ActorSystem", "open_actor_system"]


@attrs.define
class ActorSystem:
    """One running actor tree: its root supervisor and registry."""

    registry: ActorRegistry
    root: SupervisorHandle

    def lookup(self, path: str) -> ActorHandle[Any]:
        """The live actor at ``path`` (``""`` is the root).

        Raises:
            ActorNotFound: nothing is running there.
        """
        return self.registry.lookup(path)

    def tree(self, path: str = "") -> TreeNode:
        """A consistent snapshot of the whole tree (or the subtree at ``path``)."""
        return self.registry.tree(path)


@asynccontextmanager
async def open_actor_system(
    specs: Sequence[ChildSpec] = (),
    *,
    strategy: Strategy = Strategy.ONE_FOR_ONE,
    max_restarts: int = 3,
    period: float = 5.0,
    shutdown_reason: str = "system shutdown",
) -> AsyncIterator[ActorSystem]:
    """Run a root supervisor with ``specs`` for the duration of the block.

    Leaving the block stops the tree gracefully, children in reverse order.
    If the root escalates, the block is cancelled and ActorFailed is raised.
    """
    registry = ActorRegistry()
    root = Supervisor(specs, strategy=strategy, max_restarts=max_restarts, period=period)
    root.bind_root(registry)
    async with trio.open_nursery() as nursery:
        handle = await nursery.start(root.run)
        try:
            yield ActorSystem(registry, handle)
        finally:
            root.request_stop(shutdown_reason, requested_by="system")
