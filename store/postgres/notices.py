"""Lease releases, told to every host sharing the database by ``NOTIFY`` (docs/DECISIONS.md#d-session-hosts).

A host that gives a session's lease back (the session stopped, hibernated or was deleted) notifies the
``hermes_leases`` channel with the session's id, in the same statement that unlocks. Every host listens
on a connection of its own and passes each id to its callbacks: a daemon that remembered where the
session ran (to forward to it) forgets it, rather than polling the database before each request.

A notification can be missed (the listening connection broke, or a holder died without releasing):
what listeners keep is only a hint, checked by using it, so a missed one costs a failed attempt.
psycopg's notification generator blocks, so it runs in a worker thread; it wakes every
``POLL_SECONDS`` to see whether its task was cancelled.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import psycopg
import trio

from store.errors import StoreError

__all__ = ["CHANNEL", "listen_for_releases"]

log = logging.getLogger(__name__)

#: The channel lease releases are told on.
CHANNEL = "hermes_leases"
#: How often the listening thread checks whether it should stop.
POLL_SECONDS = 0.25
#: How long a broken listening connection waits before it reconnects.
RECONNECT_SECONDS = 2.0


async def listen_for_releases(
    connect: Callable[[], psycopg.Connection[Any]], released: Callable[[str], None],
    *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Call ``released(session_id)`` for every lease released anywhere in the cluster, until cancelled;
    a broken connection is reopened (the releases told meanwhile are missed). Started once the first
    connection listens, so every release told after that is heard, or once it has failed."""
    starting = [task_status]

    def listening() -> None:
        if starting:
            starting.pop().started()

    while True:
        try:
            await trio.to_thread.run_sync(_listen, connect, released, listening)
        except (psycopg.Error, StoreError, OSError) as exc:
            log.warning("listening for lease releases failed (%s); again in %g s", exc, RECONNECT_SECONDS)
        listening()
        await trio.sleep(RECONNECT_SECONDS)


def _listen(
    connect: Callable[[], psycopg.Connection[Any]], released: Callable[[str], None], listening: Callable[[], None]
) -> None:
    with connect() as conn:
        conn.execute(f"LISTEN {CHANNEL}")
        trio.from_thread.run_sync(listening)
        while True:
            for notice in conn.notifies(timeout=POLL_SECONDS):
                trio.from_thread.run_sync(released, notice.payload)
            trio.from_thread.check_cancelled()
