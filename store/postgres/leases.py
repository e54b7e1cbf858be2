"""Session leases on PostgreSQL: session-level advisory locks held on one connection of the host's own.

Why advisory locks rather than a lease row with a heartbeat: a lock lives exactly as long as the
connection that took it, so a host that dies (``kill -9``, a crash, a lost machine once the server
notices the connection gone) loses its leases at once, with no renewals to write and no expiry to
wait out; and PostgreSQL itself guarantees that two connections never hold one lock. The key is a
64-bit hash of the session id (``hashtextextended``), so unrelated sessions practically never share
one.

The connection is used by one worker thread at a time. If it breaks, every lease is gone with it:
``check()`` (run periodically by the store) notices, tells ``on_lost`` callbacks which sessions
this host must stop running, and reconnects for later leases. Between the break and the check, the
host and a new owner could both run a session (the window is ``store.lease_check_seconds``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg
import trio

from store.errors import SessionOwnedElsewhere, StoreIOError
from store.leases import LeaseLost
from store.postgres.connection import translate
from store.postgres.notices import CHANNEL

__all__ = ["PostgresLeases"]

log = logging.getLogger(__name__)

T = TypeVar("T")

_TRY_LOCK = "SELECT pg_try_advisory_lock(hashtextextended(%s, 0))"
# Taking a lease bumps the session's fencing epoch (store.postgres.fencing).
_BUMP_EPOCH = (
    "INSERT INTO lease_epochs (session_id, epoch) VALUES (%s, 1)"
    " ON CONFLICT (session_id) DO UPDATE SET epoch = lease_epochs.epoch + 1 RETURNING epoch"
)
# Unlocked and told in one statement: listeners never hear of a release that did not happen.
_UNLOCK = f"SELECT pg_advisory_unlock(hashtextextended(%s, 0)), pg_notify('{CHANNEL}', %s)"
# A bigint advisory key shows in pg_locks as its high half (classid) and low half (objid).
_HOLDER = """
WITH k AS (SELECT hashtextextended(%s, 0) AS key)
SELECT coalesce(h.name, 'pid ' || l.pid), h.address FROM k, pg_locks AS l LEFT JOIN hosts AS h ON h.lease_pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
  AND l.classid = ((k.key >> 32) & 4294967295)::oid AND l.objid = (k.key & 4294967295)::oid
"""
# Every live host with an address (but this one) and its advisory locks held, fewest first; and this host's own count.
_LOADS = """
SELECT h.address, h.lease_pid = pg_backend_pid() AS mine, count(l.pid) AS held
FROM hosts AS h LEFT JOIN pg_locks AS l ON l.pid = h.lease_pid AND l.locktype = 'advisory' AND l.granted
WHERE h.lease_pid IN (SELECT pid FROM pg_stat_activity) AND (h.address IS NOT NULL OR h.lease_pid = pg_backend_pid())
GROUP BY h.lease_pid, h.address
ORDER BY held, mine DESC
"""
_FORGET_GONE = "DELETE FROM hosts WHERE lease_pid NOT IN (SELECT pid FROM pg_stat_activity)"
_REGISTER = (
    "INSERT INTO hosts (lease_pid, name, address, started_at)"
    " VALUES (pg_backend_pid(), %s, %s, extract(epoch FROM now()))"
    " ON CONFLICT (lease_pid) DO UPDATE SET name = excluded.name, address = excluded.address,"
    " started_at = excluded.started_at"
)
_ADVERTISE = "UPDATE hosts SET address = %s WHERE lease_pid = pg_backend_pid()"


def _value(cursor: psycopg.Cursor[Any]) -> Any:
    """The first column of a statement that always returns one row (a function's call, ``RETURNING``)."""
    row = cursor.fetchone()
    if row is None:
        raise psycopg.ProgrammingError("the statement returned no row")
    return row[0]


def _take(conn: psycopg.Connection[Any], session_id: str) -> int | None:
    """Take the session's lock and bump its epoch (which is then this host's); None when another holds it."""
    if not _value(conn.execute(_TRY_LOCK, (session_id,))):
        return None
    try:
        return int(_value(conn.execute(_BUMP_EPOCH, (session_id,))))
    except BaseException:
        if not conn.broken:
            conn.execute(_UNLOCK, (session_id, session_id))
        raise


class PostgresLeases:
    """``SessionLeases`` for hosts sharing a PostgreSQL database.

    Each lease connection registers this host in the ``hosts`` table under ``name``, so a refusal can
    say which host runs the session.

    Args:
        connect: opens the lease connection (blocking; called from a worker thread).
        name: this host as others see it named (its machine and process).
    """

    def __init__(self, connect: Callable[[], psycopg.Connection[Any]], name: str) -> None:
        self._connect = connect
        self.name = name
        # Where peers reach this host (daemon.cluster_listen), once it listens.
        self.address: str | None = None
        self._conn: psycopg.Connection[Any] | None = None
        self._held: set[str] = set()
        # Sessions taken and not given back, with the fencing epoch each lease came with.
        self._epochs: dict[str, int] = {}
        self._callbacks: list[LeaseLost] = []
        self._release_callbacks: list[Callable[[str], None]] = []
        # Sessions whose leases went with a broken connection, until check() has told the callbacks.
        self._lost: list[str] = []
        # The connection is used by one thread at a time.
        self._limiter = trio.CapacityLimiter(1)

    async def acquire(self, session_id: str) -> None:
        """See ``SessionLeases.acquire``."""
        if session_id in self._held:
            return
        # Not abandoned on cancellation: the thread's answer is recorded, or a lock taken could leak.
        epoch = await self._run(lambda conn: _take(conn, session_id))
        if epoch is None:
            holder = await self._run(lambda conn: conn.execute(_HOLDER, (session_id,)).fetchone())
            where = f" ({holder[0]})" if holder is not None else ""
            raise SessionOwnedElsewhere(
                f"session {session_id!r} is running on another host{where}",
                address=holder[1] if holder is not None else None,
            )
        self._held.add(session_id)
        self._epochs[session_id] = epoch

    def epoch(self, session_id: str) -> int | None:
        """The fencing epoch this host got with the session's lease, until it gives the lease back
        (kept when the lease connection breaks: the writes it fences must then be refused if another
        host took over); None for a session this host never took."""
        return self._epochs.get(session_id)

    async def release(self, session_id: str) -> None:
        """See ``SessionLeases.release``."""
        self._epochs.pop(session_id, None)
        if session_id not in self._held:
            return
        self._held.discard(session_id)
        try:
            await self._run(lambda conn: conn.execute(_UNLOCK, (session_id, session_id)))
        except StoreIOError as exc:
            # A broken connection has released every lock already.
            log.warning("session %s: its lease was not released (%s); it went with the connection", session_id, exc)

    def held(self) -> frozenset[str]:
        """See ``SessionLeases.held``."""
        return frozenset(self._held)

    async def holder(self, session_id: str) -> str | None:
        """See ``SessionLeases.holder``."""
        if session_id in self._held:
            return None
        found = await self._run(lambda conn: conn.execute(_HOLDER, (session_id,)).fetchone())
        return found[1] if found is not None else None

    async def less_loaded_peer(self) -> str | None:
        """See ``SessionLeases.less_loaded_peer``: the live host with an address holding the fewest leases,
        when it holds fewer than this one (a tie stays here)."""
        rows = await self._run(lambda conn: conn.execute(_LOADS).fetchall())
        mine = next((held for _, is_mine, held in rows if is_mine), None)
        if not rows or mine is None:
            return None
        address, is_mine, held = rows[0]
        return address if not is_mine and held < mine else None

    async def advertise(self, address: str) -> None:
        """Register where peers reach this host (its ``daemon.cluster_listen`` address)."""
        self.address = address
        await self._run(lambda conn: conn.execute(_ADVERTISE, (address,)))

    def on_lost(self, callback: LeaseLost) -> None:
        """See ``SessionLeases.on_lost``."""
        self._callbacks.append(callback)

    def on_released(self, callback: Callable[[str], None]) -> None:
        """See ``SessionLeases.on_released``."""
        self._release_callbacks.append(callback)

    def released(self, session_id: str) -> None:
        """A lease was given back somewhere in the cluster (told by ``store.postgres.notices``)."""
        for callback in self._release_callbacks:
            callback(session_id)

    async def check(self) -> None:
        """Ask the lease connection whether it is alive; if it is not, every lease is lost: say so."""
        try:
            await self._run(lambda conn: conn.execute("SELECT 1"))
        except StoreIOError as exc:
            log.warning("lease check failed: %s", exc)
            self._drop_held()
        if self._lost:
            lost, self._lost = self._lost, []
            log.error("the lease connection broke: %d sessions must stop on this host", len(lost))
            for callback in self._callbacks:
                await callback(lost)

    def _drop_held(self) -> None:
        """The connection that held the leases broke: none is held any more."""
        self._lost.extend(sorted(self._held))
        self._held.clear()

    async def close(self) -> None:
        """Close the connection (its locks go with it)."""
        self._held.clear()
        conn, self._conn = self._conn, None
        if conn is not None:
            async with self._limiter:
                await trio.to_thread.run_sync(conn.close)

    async def _run(self, query: Callable[[psycopg.Connection[Any]], T]) -> T:
        async with self._limiter:
            if self._conn is None and self._held:
                # The connection that held them broke: a new one will hold none of them.
                self._drop_held()
            return await trio.to_thread.run_sync(self._in_thread, query)

    def _in_thread(self, query: Callable[[psycopg.Connection[Any]], T]) -> T:
        try:
            if self._conn is None:
                conn = self._connect()
                try:
                    conn.execute(_FORGET_GONE)
                    conn.execute(_REGISTER, (self.name, self.address))
                except BaseException:
                    conn.close()
                    raise
                self._conn = conn
            return query(self._conn)
        except (psycopg.Error, OSError) as exc:
            held = self._conn
            if held is not None and not (held.broken or held.closed):
                # The query failed, not the connection (out of lock space, say): the leases it
                # holds are still held.
                raise translate(exc, "a lease query failed") from exc
            self._conn = None
            if held is not None:
                held.close()
            raise translate(OSError(f"the lease connection failed: {exc}")) from exc
