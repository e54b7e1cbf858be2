"""The ``store`` actor: runs the session store in the tree (SQLite's single writer, or PostgreSQL's
connection pool).

Stopping it closes the store gracefully: writes already queued commit before
the actor ends. It is started first and stopped last, after every session
has committed.
"""

from __future__ import annotations

from typing import Any

import attrs
import trio

from actors import Actor
from messages.supervision import ActorState
from store.sql.store import SqlSessionStore

__all__ = ["StoreActor"]


class StoreActor(Actor[None]):
    """Owns the daemon's store (``store.factory.make_store``) for the daemon's life."""

    kind = "store"

    def __init__(self, store: SqlSessionStore) -> None:
        super().__init__()
        self.store = store
        self._finished = trio.Event()

    def snapshot_details(self) -> dict[str, Any]:
        return {
            "path": str(self.store.path),
            "leases_held": len(self.store.leases.held()),
            **attrs.asdict(self.store.statistics()),
        }

    async def on_start(self) -> None:
        assert self._nursery is not None
        await self._nursery.start(self._serve)

    async def _serve(self, *, task_status: trio.TaskStatus[None]) -> None:
        try:
            await self.store.run(task_status=task_status)
        finally:
            self._finished.set()

    async def main(self) -> None:
        self.state = ActorState.RUNNING
        await self._finished.wait()

    def request_stop(self, reason: str, *, requested_by: str = "operator") -> None:
        """Close the store: queued writes commit, then the actor ends."""
        self.cancel_reason = f"{reason} (requested by {requested_by})"
        self.state = ActorState.STOPPING
        self.store.close()
