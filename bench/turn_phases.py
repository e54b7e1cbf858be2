"""Where a tool turn's time goes under load: the gaps between a session's events, per turn.

    .venv/bin/python bench/turn_phases.py --url http://127.0.0.1:PORT/v1 [--sessions 200] [--turns 5]

Runs the side-by-side harness's ``turns`` workload (``bench/vs_hermes``: each turn one model call asking for
``terminal true``, the command, one more model call) on a real daemon, against an already running
``bench/vs_hermes/fake_model.py``, and times each session's events as its attached client receives them.
For each pair of consecutive event types it prints the milliseconds per turn spent between them, largest
first: ``ToolStarted -> ToolFinished`` is the command (its fork included), ``TurnStarted -> TextDelta`` the
first model call (with the user message's commit before it), ``UsageUpdated -> TurnFinished`` the turn's last
commit.
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "vs_hermes"))

import drive_actors  # noqa: E402

PROMPT = "turn {n}: check the machine [[bench tools=1]]"


def phases(url: str, sessions: int, turns: int) -> tuple[float, dict[tuple[str, str], list[float]]]:
    """Turns per second, and the gaps (seconds) between each session's consecutive events, by their types."""
    gaps: dict[tuple[str, str], list[float]] = collections.defaultdict(list)
    with drive_actors.daemon(url, "full-access", ["terminal"]) as daemon:
        ids = [daemon.create() for _ in range(sessions)]
        sent = dict.fromkeys(ids, 0)
        last: dict[str, tuple[str, float]] = {}
        done = 0
        start = time.perf_counter()
        for session_id in ids:
            daemon.send(session_id, PROMPT.format(n=0))
            sent[session_id] = 1
            last[session_id] = ("sent", time.perf_counter())
        while done < sessions * turns:
            message = daemon.receive()
            session_id = message.get("session_id")
            if session_id not in last:
                continue
            now = time.perf_counter()
            kind = message.get("type", "?")
            before, at = last[session_id]
            gaps[(before, kind)].append(now - at)
            last[session_id] = (kind, now)
            if kind == "TurnFinished":
                done += 1
                if sent[session_id] < turns:
                    daemon.send(session_id, PROMPT.format(n=sent[session_id]))
                    sent[session_id] += 1
                    last[session_id] = ("sent", time.perf_counter())
        return done / (time.perf_counter() - start), gaps


def main() -> None:
    """Run the workload once and print the phases."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="the fake model's base URL")
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--turns", type=int, default=5)
    args = parser.parse_args()
    rate, gaps = phases(args.url, args.sessions, args.turns)
    total = args.sessions * args.turns
    print(f"{args.sessions} sessions x {args.turns} turns: {rate:.1f} turns/s")
    for (before, after), values in sorted(gaps.items(), key=lambda item: -sum(item[1])):
        print(f"{before:>14} -> {after:<14} {sum(values) / total * 1000:8.1f} ms per turn "
              f"(n={len(values)}, mean {statistics.mean(values) * 1000:.1f} ms)")


if __name__ == "__main__":
    main()
