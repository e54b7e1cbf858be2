"""200 sessions x 5 tool turns on one session host and on ``daemon.hosts: auto``; Hermes Agent beside them if asked.

Run: .venv/bin/python bench/bench_hosts.py [--rounds 3] [--sessions 200] [--turns 5] [--hermes] [--base TREE]

One fake model (``bench/vs_hermes/fake_model.py``, its own process, 50 ms before each reply) serves
every run. Each round runs hermes-actors with one host (the daemon runs its sessions itself) and with
``daemon.hosts: auto`` (one host per core), alternating which goes first; ``--base TREE`` runs another
worktree's daemon the same way (before and after in one run), ``--hermes`` adds Hermes Agent 0.19. The
default config: tools jailed, unpinned. On a shared machine turns/s is noise; the CPU per turn is not:
each run reports where the machine's CPU went per turn (the front process, its host processes, the
tools' processes, the fake model, this benchmark's driver), and the machine's total, which bounds
turns/s once both cores are full.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent / "vs_hermes"))

from run import HERMES_VENV, ROOT, Bench, FakeModel, _commit, environment, hermes_python  # noqa: E402

#: (column, figure from one run): CPU per turn in milliseconds.
_SHARES = (
    ("front", lambda r: r.get("front_cpu_s", 0.0)),
    ("hosts", lambda r: r["cpu_s"] - r.get("front_cpu_s", 0.0)),
    ("tools", lambda r: r["tree_cpu_s"] - r["cpu_s"]),
    ("model", lambda r: r["model_cpu_s"]),
    ("driver", lambda r: r.get("driver_cpu_s", 0.0)),
    ("total", lambda r: r["tree_cpu_s"] + r["model_cpu_s"] + r.get("driver_cpu_s", 0.0)),
    ("front's loop", lambda r: r.get("front_loop_cpu_s", 0.0)),
    ("hosts' loops", lambda r: r.get("host_loops_cpu_s", 0.0)),
    ("machine", lambda r: r.get("machine_cpu_s", 0.0)),
)


def bound(run: dict[str, Any], hosts: int) -> float:
    """The turns/s this run's CPU per turn allows on an otherwise idle machine: each event loop can use one
    core (the front's, and each of ``hosts`` hosts' with its share of the turns), and everything
    (``total``) can use every core."""
    turns = run["turns"]
    loop = max(run["front_loop_cpu_s"], run["host_loops_cpu_s"] / hosts) / turns
    total = (run["tree_cpu_s"] + run["model_cpu_s"] + run["driver_cpu_s"]) / turns
    return min(1 / loop, (os.cpu_count() or 1) / total)


def main() -> None:
    """Run the rounds and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--hermes", action="store_true", help="also run Hermes Agent 0.19 (slow: minutes a round)")
    parser.add_argument("--base", type=Path, default=None, help="another hermes-actors worktree to run as well (before)")
    args = parser.parse_args()
    # A base tree from before ``auto`` could be read from config.yaml gets the count it stands for.
    programs: list[tuple[str, str, list[str]]] = [
        (f"{side}, {hosts}", side, ["--hosts", value if side == "actors" or value != "auto" else str(os.cpu_count())])
        for side in (("base", "actors") if args.base else ("actors",))
        for hosts, value in (("1 host", "1"), (f"hosts: auto ({os.cpu_count()})", "auto"))
    ]
    if args.hermes:
        programs.insert(0, ("Hermes Agent 0.19", "hermes", []))
    size = ["--sessions", str(args.sessions), "--turns", str(args.turns)]
    server = FakeModel(args.latency)
    samples: dict[str, list[dict[str, Any]]] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="bench-hosts-") as tmp:
            hermes = hermes_python(HERMES_VENV) if args.hermes else Path(sys.executable)
            bench = Bench(server, environment(Path(tmp)), Path(tmp), hermes, args.base)
            for round_ in range(args.rounds):
                order = programs if round_ % 2 == 0 else programs[::-1]
                for label, program, extra in order:
                    out = bench.run(program, "turns", *size, *extra)
                    if out is not None:
                        samples.setdefault(label, []).append(out)
            report(args, programs, samples, bench.failures)
    finally:
        server.stop()


def report(
    args: argparse.Namespace, programs: list[tuple[str, str, list[str]]], samples: dict[str, list[dict[str, Any]]],
    failures: list[str],
) -> None:
    """The table: turns/s and where the CPU of a turn went (medians), against one host of the same tree."""
    print(f"# {args.sessions} sessions x {args.turns} tool turns, {args.rounds} alternating rounds, medians; "
          f"fake model latency {args.latency * 1000:.0f} ms; load {os.getloadavg()[0]:.2f} at the end")
    for label, tree in (("hermes-actors", ROOT), *((("base", args.base),) if args.base else ())):
        print(f"- {label}: {tree} at {_commit(tree)}")
    shares = " | ".join(name for name, _ in _SHARES)
    print(f"| program | turns/s | vs 1 host | busy cores | bound on an idle machine (turns/s) | vs 1 host | "
          f"CPU per turn (ms): {shares} |")
    print("| --- " * (6 + len(_SHARES)) + "|")
    rate = {label: statistics.median(r["turns"] / r["wall_s"] for r in runs) for label, runs in samples.items()}
    for label, program, _ in programs:
        if label not in rate:
            print(f"| {label} | FAILED |" + " |" * (1 + len(_SHARES)))
            continue
        one = rate.get(f"{program}, 1 host")
        versus = f"{rate[label] / one:.2f}x" if one and program != "hermes" else ""
        runs = samples[label]
        cells = [f"{statistics.median(share(r) / r['turns'] * 1000 for r in runs):.2f}" for _, share in _SHARES]
        busy = statistics.median(r.get("machine_cpu_s", 0.0) / r["wall_s"] for r in runs)
        if program == "hermes":
            print(f"| {label} | {rate[label]:.1f} | | {busy:.2f} | | | " + " | ".join(cells) + " |")
            continue
        limit = statistics.median(bound(r, 1 if label.endswith("1 host") else os.cpu_count() or 1) for r in runs)
        limit_one = statistics.median(bound(r, 1) for r in samples.get(f"{program}, 1 host", runs))
        print(f"| {label} | {rate[label]:.1f} | {versus} | {busy:.2f} | {limit:.0f} | {limit / limit_one:.2f}x | "
              + " | ".join(cells) + " |")
    for label, runs in samples.items():
        print(f"- {label}: turns/s by round " + ", ".join(f"{r['turns'] / r['wall_s']:.1f}" for r in runs)
              + "; store transactions (busy retries) by round "
              + ", ".join(f"{r.get('store_transactions', '?')} ({r.get('store_busy_retries', '?')})" for r in runs))
    for failure in failures:
        print(failure)


if __name__ == "__main__":
    main()
