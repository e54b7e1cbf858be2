"""Benchmarks of the daemon's front door; prints its figures.

    .venv/bin/python bench/bench_daemon.py [--actors 1000] [--runs 15]

- ``tree --json`` end to end (a new CLI process each time, interpreter start
  included) against a daemon holding at least ``--actors`` actors: 1,000 open
  client connections are 1,000 connection actors.
- The same request over an open connection (the daemon's own share).
- attach -> first event: a new connection (connect, hello) attaching with
  ``since=0`` to a session with three turns of history, until the first
  replayed event arrives (against the scripted provider).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from control.client import ControlClient  # noqa: E402
from control.errors import DaemonNotRunning  # noqa: E402
from control.paths import DaemonPaths  # noqa: E402
from messages import control as c  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def _start_daemon(home: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ, HERMES_ACTORS_HOME=str(home))
    process = subprocess.Popen(
        [sys.executable, "-m", "cli", "daemon"],
        env=env, cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            ControlClient.connect(DaemonPaths(home)).close()
            return process
        except DaemonNotRunning:
            time.sleep(0.05)
    process.kill()
    raise SystemExit("daemon did not start")


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main() -> None:
    """Run the benchmarks and print their figures."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--actors", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ha-bench-") as base:
        home = Path(base) / "home"
        paths = DaemonPaths(home)
        daemon = _start_daemon(home)
        holders: list[ControlClient] = []
        try:
            opened = time.perf_counter()
            while len(holders) < args.actors:
                holders.append(ControlClient.connect(paths, client="bench-holder"))
            open_seconds = time.perf_counter() - opened
            env = dict(os.environ, HERMES_ACTORS_HOME=str(home))
            timings: list[float] = []
            size = 0
            actors = 0
            for _ in range(args.runs):
                started = time.perf_counter()
                result = subprocess.run(
                    [sys.executable, "-m", "cli", "tree", "--json"],
                    env=env, cwd=REPO, capture_output=True, text=True, check=True,
                )
                timings.append(time.perf_counter() - started)
                size = len(result.stdout)
                data = json.loads(result.stdout)
                stack, actors = [data["tree"]], 0
                while stack:
                    node = stack.pop()
                    actors += 1
                    stack.extend(node["children"])
            with ControlClient.connect(paths) as client:
                in_process: list[float] = []
                for _ in range(args.runs):
                    started = time.perf_counter()
                    client.request(c.Tree(client.next_id()))
                    in_process.append(time.perf_counter() - started)
            print(f"connections opened: {args.actors} in {open_seconds:.2f} s")
            print(f"tree --json end to end, {actors} actors, {size / 1024:.0f} KiB of JSON, {args.runs} runs:")
            print(f"  min {min(timings) * 1000:.0f} ms  median {statistics.median(timings) * 1000:.0f} ms  "
                  f"p90 {_percentile(timings, 0.9) * 1000:.0f} ms  (target <= 250 ms)")
            print(f"Tree request on an open connection: median {statistics.median(in_process) * 1000:.1f} ms")
            _bench_attach(paths, args.runs)
        finally:
            for holder in holders:
                holder.close()
            daemon.terminate()
            daemon.wait(30)


def _bench_attach(paths: DaemonPaths, runs: int) -> None:
    """Attach -> first event: a new connection replaying a session's history (since=0)."""
    provider = subprocess.Popen(
        [sys.executable, "-m", "providers.scripted", "--port", "0", "--rules"],
        cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    try:
        assert provider.stdout is not None
        base_url = provider.stdout.readline().strip()
        with ControlClient.connect(paths) as client:
            created = client.request_raw(c.CreateSession(
                client.next_id(), cwd=str(REPO), model="scripted", provider="custom",
                base_url=base_url, api_mode="chat_completions",
            ))
            session_id = created["session_id"]
            client.request_raw(c.Attach(client.next_id(), session_id, None))
            for turn in range(3):
                client.request_raw(c.SendMessage(client.next_id(), session_id, f"turn {turn}, no tools"))
                while client.receive_raw().get("type") != "TurnFinished":
                    pass
        timings: list[float] = []
        for _ in range(runs):
            started = time.perf_counter()
            with ControlClient.connect(paths) as client:
                client.request_raw(c.Attach(client.next_id(), session_id, 0))
                client.receive_raw()
            timings.append(time.perf_counter() - started)
        print(f"attach -> first event (connect, hello, attach since=0, first replayed event), {runs} runs:")
        print(f"  min {min(timings) * 1000:.1f} ms  median {statistics.median(timings) * 1000:.1f} ms  "
              f"p90 {_percentile(timings, 0.9) * 1000:.1f} ms")
        live: list[float] = []
        with ControlClient.connect(paths) as client:
            client.request_raw(c.Attach(client.next_id(), session_id, None))
            for turn in range(runs):
                started = time.perf_counter()
                client.request_raw(c.SendMessage(client.next_id(), session_id, f"live {turn}, no tools"))
                first = client.receive_raw()
                live.append(time.perf_counter() - started)
                assert first.get("type") == "TurnStarted", first
                while client.receive_raw().get("type") != "TurnFinished":
                    pass
        print(f"send -> first live event (TurnStarted) on an attached connection, {runs} runs:")
        print(f"  min {min(live) * 1000:.1f} ms  median {statistics.median(live) * 1000:.1f} ms  "
              f"p90 {_percentile(live, 0.9) * 1000:.1f} ms")
    finally:
        provider.terminate()
        provider.wait(10)


if __name__ == "__main__":
    main()
