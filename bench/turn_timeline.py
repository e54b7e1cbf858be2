"""Where a turn's time goes in the turns workload: per part of the turn, and what the loop waits for asleep.

Run: .venv/bin/python bench/turn_timeline.py [--trees TREE ...] [--sessions 50] [--turns 5] [--rounds 1] [--weighted]

The side-by-side harness's ``turns`` workload (``bench/vs_hermes``: each turn one model call asking for
``terminal true``, the command, one more model call; default config, jailed; the fake model at 50 ms) on
each tree's daemon (ABAB), with ``turn_probe/sitecustomize.py`` loaded into the daemon. Per run it prints:

- per turn, the mean wall time of its parts: the turn, its model calls, the commits of its messages, its tool
  calls, its closing save, the store writes, the resident shell's start of the command and its exit; and the
  loop's task steps, their waits in the run queue, and its sleeps;
- every 100 ms of the run: how long the loop slept, and while it slept how many sessions were in a turn and
  of them how many waited on the model, on their shell, on the store (the rest of a turn is the loop's).

The probe costs the loop about a tenth of its CPU; the turns/s it prints are the probed daemon's.
``--weighted`` runs it all under ``bench_saturation.py``'s largest ``cpu.shares`` (root, cgroup v1).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "vs_hermes"))

import drive_actors  # noqa: E402
from bench_saturation import each_turn, fake_model  # noqa: E402
from run import ROOT, FakeModel  # noqa: E402

WINDOW_SECONDS = 0.1
_PARTS = ("turn", "turn.model_call", "turn.commit", "turn.tool_calls", "turn.closing_save", "store.write",
          "shell.start_command", "shell.started", "shell.exit", "loop.task_step", "loop.run_queue_wait", "loop.slept")


def probed_run(server: FakeModel, tree: Path, sessions: int, turns: int) -> tuple[float, dict[str, Any]]:
    """``sessions`` × ``turns`` on ``tree``'s daemon with the probe in it: turns/s and what the probe wrote."""
    drive_actors.DAEMON_ROOT = tree
    server.reset()
    with tempfile.TemporaryDirectory(prefix="turn-probe-") as scratch:
        out = Path(scratch) / "probe.json"
        saved = {name: os.environ.get(name) for name in ("HERMES_TURN_PROBE", "PYTHONPATH")}
        os.environ.update(HERMES_TURN_PROBE=str(out), PYTHONPATH=str(HERE / "turn_probe"))
        try:
            with drive_actors.daemon(server.url, "default", ["terminal"]) as d:
                _restore(saved)  # the daemon has them; what this process starts next does not
                ids = [d.create() for _ in range(sessions)]
                start = time.perf_counter()
                done = sum(1 for _ in each_turn(d, ids, turns))
                rate = done / (time.perf_counter() - start)
        finally:
            _restore(saved)
        return rate, json.loads(out.read_text())


def _restore(saved: dict[str, str | None]) -> None:
    """Put the environment variables in ``saved`` back as they were (None: unset)."""
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def report(label: str, rate: float, probe: dict[str, Any]) -> None:
    """Print one run's two tables."""
    totals, turns = probe["totals"], len(probe["turns"])
    print(f"\n## {label}: {rate:.1f} turns/s (probed), {turns} turns\n")
    print("| part | calls a turn | ms each | ms a turn |\n| --- | --- | --- | --- |")
    for part in _PARTS:
        calls, seconds = totals.get(part, (0, 0.0))
        each = seconds / calls * 1000 if calls else 0.0
        print(f"| {part} | {calls / turns:.2f} | {each:.2f} | {seconds / turns * 1000:.1f} |")
    start = min(begun for begun, _ in probe["turns"])
    end = max(ended for _, ended in probe["turns"])
    print("\n| window (ms) | loop slept (ms) | in a turn | model / shell / store | turns ended |\n| --- | --- | --- | --- | --- |")
    for index in range(int((end - start) / WINDOW_SECONDS) + 1):
        low, high = start + index * WINDOW_SECONDS, start + (index + 1) * WINDOW_SECONDS
        sleeps = [sleep for sleep in probe["sleeps"] if low <= sleep[0] < high]
        slept = sum(sleep[1] for sleep in sleeps)
        # Sessions in each state, averaged over the loop's sleeps in the window (weighted by their length).
        waiting = [sum(sleep[1] * sleep[column] for sleep in sleeps) / slept if slept else 0.0 for column in (2, 3, 4, 5)]
        ended = sum(1 for _, finished in probe["turns"] if low <= finished < high)
        print(f"| {index * 100}–{(index + 1) * 100} | {slept * 1000:.1f} | {waiting[0]:.1f} | "
              f"{waiting[1]:.1f} / {waiting[2]:.1f} / {waiting[3]:.1f} | {ended} |")


def main() -> None:
    """Run the rounds (every tree in turn) and print each run's tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", type=Path, nargs="+", default=[ROOT], help="worktrees whose daemons run (ABAB)")
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--weighted", action="store_true", help="run under the largest cpu.shares (root)")
    args = parser.parse_args()
    with fake_model(args.latency, args.weighted) as server:
        for number in range(args.rounds):
            for tree in args.trees:
                rate, probe = probed_run(server, tree, args.sessions, args.turns)
                report(f"{tree} round {number}, {args.sessions} x {args.turns}", rate, probe)


if __name__ == "__main__":
    main()
