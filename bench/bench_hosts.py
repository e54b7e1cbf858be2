"""200 sessions x 5 tool turns on 1 and on 2 session hosts (``daemon.hosts``), and Hermes Agent beside them.

Run: .venv/bin/python bench/bench_hosts.py [--rounds 3] [--sessions 200] [--turns 5] [--no-hermes]

One fake model (``bench/vs_hermes/fake_model.py``, its own process, 50 ms before each reply) serves
every run. Each round runs Hermes Agent 0.19 (``bench/vs_hermes``), hermes-actors with one host (the
daemon runs its sessions itself) and with two host processes, in an order that rotates by round. The
daemon's CPU is its own process's plus its hosts' (the tools' processes are not counted, as for
Hermes). Prints one table of medians; the fake model and this driver share the machine's cores.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent / "vs_hermes"))

from run import Bench, FakeModel, environment, hermes_python  # noqa: E402


def main() -> None:
    """Run the rounds and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--no-hermes", action="store_true", help="only hermes-actors, 1 and 2 hosts")
    args = parser.parse_args()
    programs: list[tuple[str, str, list[str]]] = [
        ("hermes-actors, 1 host", "actors", ["--hosts", "1"]),
        ("hermes-actors, 2 hosts", "actors", ["--hosts", "2"]),
    ]
    if not args.no_hermes:
        hermes_python()
        programs.insert(0, ("Hermes Agent 0.19", "hermes", []))
    size = ["--sessions", str(args.sessions), "--turns", str(args.turns)]
    server = FakeModel(args.latency)
    samples: dict[str, list[dict[str, Any]]] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="bench-hosts-") as tmp:
            bench = Bench(server, environment(Path(tmp)), Path(tmp))
            for round_ in range(args.rounds):
                shift = round_ % len(programs)
                for label, program, extra in programs[shift:] + programs[:shift]:
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
    """The table: turns/s and CPU per turn (medians), against one host and against Hermes."""
    print(f"# {args.sessions} sessions x {args.turns} tool turns, {args.rounds} rounds, medians; "
          f"fake model latency {args.latency * 1000:.0f} ms")
    print("| program | turns/s | CPU per turn (ms) | vs 1 host | vs Hermes |")
    print("| --- | --- | --- | --- | --- |")
    rate = {label: statistics.median(r["turns"] / r["wall_s"] for r in runs) for label, runs in samples.items()}
    cpu = {label: statistics.median(r["cpu_s"] / r["turns"] * 1000 for r in runs) for label, runs in samples.items()}
    one, hermes = rate.get("hermes-actors, 1 host"), rate.get("Hermes Agent 0.19")
    for label, _, _ in programs:
        if label not in rate:
            print(f"| {label} | FAILED | | | |")
            continue
        versus_one = f"{rate[label] / one:.2f}x" if one and label.startswith("hermes-actors") else ""
        versus_hermes = f"{rate[label] / hermes:.2f}x" if hermes and label != "Hermes Agent 0.19" else ""
        print(f"| {label} | {rate[label]:.1f} | {cpu[label]:.2f} | {versus_one} | {versus_hermes} |")
    for failure in failures:
        print(failure)


if __name__ == "__main__":
    main()
