"""Session leases: a live session is run by exactly one host (docs/DECISIONS.md#d-session-hosts).

A host takes a session's lease before it runs the session (a new one, or one woken from the store)
and gives it back when the session stops. On SQLite there is one host per database file, so every
lease is granted (``LocalLeases``); on PostgreSQL, hosts sharing the database contend for them
(``store.postgres.leases``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

__all__ = ["LeaseLost", "LocalLeases", "SessionLeases"]

LeaseLost = Callable[[list[str]], Awaitable[None]]
"""Told the ids of the sessions whose leases this host lost (its lease connection broke); it stops them."""


class SessionLeases(Protocol):
    """Who may run which session."""

    async def acquire(self, session_id: str) -> None:
        """Take the session's lease (again: a no-op).

        Raises:
            SessionOwnedElsewhere: another host holds it. StoreIOError: the database cannot be reached.
        """
        ...

    async def release(self, session_id: str) -> None:
        """Give the lease back (not held: a no-op)."""
        ...

    def held(self) -> frozenset[str]:
        """The sessions whose leases this host holds."""
        ...

    def on_lost(self, callback: LeaseLost) -> None:
        """Call ``callback`` with the sessions whose leases are lost, whenever that happens."""
        ...

    async def holder(self, session_id: str) -> str | None:
        """The address of the host holding the session's lease (to forward to), or None: no one, this
        host, or a host that cannot be reached."""
        ...

    def on_released(self, callback: Callable[[str], None]) -> None:
        """Call ``callback`` with a session's id whenever any host gives its lease back."""
        ...

    async def less_loaded_peer(self) -> str | None:
        """The address of a host that should take a new session rather than this one, or None."""
        ...

    async def advertise(self, address: str) -> None:
        """Record where other hosts reach this one (``HOST:PORT``), to forward requests for its sessions."""
        ...


class LocalLeases:
    """Every lease granted: the database has one host (SQLite, or sessions without a daemon)."""

    def __init__(self) -> None:
        self._held: set[str] = set()

    async def acquire(self, session_id: str) -> None:
        """See ``SessionLeases.acquire``."""
        self._held.add(session_id)

    async def release(self, session_id: str) -> None:
        """See ``SessionLeases.release``."""
        self._held.discard(session_id)

    def held(self) -> frozenset[str]:
        """See ``SessionLeases.held``."""
        return frozenset(self._held)

    def on_lost(self, callback: LeaseLost) -> None:
        """Never called: a local lease cannot be lost."""

    async def holder(self, session_id: str) -> str | None:
        """No other host shares the database."""
        return None

    def on_released(self, callback: Callable[[str], None]) -> None:
        """Never called: no other host needs telling."""

    async def less_loaded_peer(self) -> str | None:
        """No other host shares the database."""
        return None

    async def advertise(self, address: str) -> None:
        """Nothing to record: no other host shares the database."""
