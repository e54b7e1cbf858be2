"""Benchmark of the HTTP API under overload: what 1,000 concurrent requests are answered; prints the counts.

    .venv/bin/python bench/bench_api_overload.py [--requests 1000] [--cap 10] [--rounds 3]

The processes of ``bench/bench_api.py`` (the scripted provider, a real daemon with
``platforms.api_server`` enabled and ``max_concurrent_runs`` at ``--cap``, this client).
Each round opens ``--requests`` loopback connections at once, each sending one
non-streaming chat completion (``tests/api/overload.py``: raw sockets and h11, so a
reset is counted as a reset, not retried). Every request should get an HTTP answer: 200
for an admitted one, 429 with ``Retry-After`` for one over the cap; any other fate
(a reset, a close without an answer) is counted by name.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import bench_api  # noqa: E402

from tests.api.overload import fire, tally  # noqa: E402

#: The most one round may take; a request still open then is counted as unfinished.
ROUND_SECONDS = 120.0


async def _round(port: int, requests: int) -> None:
    payload = {"model": "scripted-model", "messages": [{"role": "user", "content": "overload question"}]}
    headers = {"Authorization": f"Bearer {bench_api.KEY}"}
    started = time.perf_counter()
    fates = await fire("127.0.0.1", port, "/v1/chat/completions", payload, headers, requests, ROUND_SECONDS)
    wall = time.perf_counter() - started
    counts = tally(fates)
    without_retry = sum(1 for fate in fates if fate.status in (429, 503) and fate.retry_after is None)
    shown = ", ".join(f"{label} x {n}" for label, n in sorted(counts.items()))
    print(f"{requests} concurrent: {shown} in {wall:.1f} s; 429/503 without Retry-After: {without_retry}", flush=True)


def main() -> None:
    """Start the provider and the daemon, fire the rounds, stop them."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--cap", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ha-bench-") as tmp:
        base = Path(tmp)
        # A step for every request that could be admitted, in every round.
        provider, provider_url = bench_api._start_provider(base, args.requests * args.rounds)
        port = bench_api._free_port()
        daemon = bench_api._start_daemon(base, provider_url, port, args.cap)
        try:
            print(f"API http://127.0.0.1:{port}/v1, max_concurrent_runs {args.cap}, {os.cpu_count()} cores")
            for _ in range(args.rounds):
                trio.run(_round, port, args.requests)
        finally:
            bench_api._stop(daemon, provider)


if __name__ == "__main__":
    main()
