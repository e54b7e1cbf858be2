"""Fencing a live session's writes with its lease's epoch (docs/DECISIONS.md#d-session-hosts).

A lease is an advisory lock on the host's lease connection (``store.postgres.leases``). When that
connection breaks, the host learns it only at its next check (``store.lease_check_seconds``), and
meanwhile another host may take the lease and run the session. To keep the old owner from writing
into the new owner's conversation in that window, taking a lease bumps the session's epoch in
``lease_epochs``, and every write a live session makes (messages, state, counters, transcript) first
reads that row ``FOR SHARE`` in its own transaction and compares it with the epoch its host got:

- a different epoch means another host has taken the lease since: the write is refused
  (``LeaseLostError``) and nothing of it is committed;
- the row lock means a host taking the lease waits for the write's transaction to end, so a write that
  passed the check is committed before the new owner loads the session, and the new owner sees it.

One indexed row read per write; no scan of the lock table.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from store.errors import LeaseLostError

__all__ = ["fenced"]

_EPOCH = "SELECT epoch FROM lease_epochs WHERE session_id = ? FOR SHARE"


def fenced(op: Callable[..., Any], conn: Any, *, epoch: int, session_id: str, **arguments: Any) -> Any:
    """Run the write ``op`` for ``session_id`` if its lease's epoch is still ``epoch``.

    Raises:
        LeaseLostError: another host has taken the session's lease since this one got ``epoch``.
    """
    row = conn.execute(_EPOCH, (session_id,)).fetchone()
    current = None if row is None else int(row[0])
    if current != epoch:
        raise LeaseLostError(
            f"session {session_id}: another host has taken its lease (epoch {current}, this host's {epoch});"
            " the write is refused"
        )
    return op(conn, session_id=session_id, **arguments)
