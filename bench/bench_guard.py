"""Benchmark of the command guard: agreement with Hermes 0.19.0's, verdicts per class, µs per command.

Over ``tests/fixtures/hermes_0_19/command_corpus.txt`` (everyday, dangerous and near-miss commands):
how often our verdict (hardline, sudo_stdin, dangerous, safe) is Hermes's (``guard_verdicts.json``,
pinned from its wheel), the count of each class for both, and the median CPU time our guard takes
per command (each command judged many times in a row; the median over the corpus). CPU time, not
wall time: on a shared machine the wall clock measured the neighbours (the same run gave 15 to 70
µs), the process's CPU time stays within a few percent. Hermes's own time is
measured only when a virtualenv with ``hermes-agent==0.19.0`` installed is named: its guard runs
there, in a child process, on the same corpus with the same ``HOME`` as the fixture.

Run: .venv/bin/python bench/bench_guard.py [--hermes-venv /path/to/venv]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tools.approval_patterns import judge  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "hermes_0_19"
HOME = "/home/hermes-user"
"""The HOME docs/hermes_pin/pin.py gives Hermes: both guards fold it into ``~``."""
CLASSES = ("hardline", "sudo_stdin", "dangerous", "safe")

# Run by the Hermes virtualenv's Python: the same timing loop around Hermes's three checks.
_HERMES_TIMER = """
import json, statistics, sys, time
from tools import approval
commands, repeat = json.load(sys.stdin), int(sys.argv[1])
def check(command):
    approval.detect_hardline_command(command)
    approval._check_sudo_stdin_guard(command)
    approval.detect_dangerous_command(command)
samples = []
for command in commands:
    check(command)
    start = time.process_time()
    for _ in range(repeat):
        check(command)
    samples.append((time.process_time() - start) / repeat * 1e6)
print(json.dumps(statistics.median(samples)))
"""


def corpus() -> list[str]:
    """The corpus's commands, in order."""
    commands = []
    for line in (FIXTURES / "command_corpus.txt").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            commands.append(json.loads(line) if line.startswith('"') else line)
    return commands


def ours_median_us(commands: list[str], repeat: int) -> float:
    """Median CPU µs per command of our guard (``judge``)."""
    samples = []
    for command in commands:
        judge(command, HOME)
        start = time.process_time()
        for _ in range(repeat):
            judge(command, HOME)
        samples.append((time.process_time() - start) / repeat * 1e6)
    return statistics.median(samples)


def hermes_median_us(venv: Path, commands: list[str], repeat: int) -> float:
    """Median CPU µs per command of Hermes's guard, run in ``venv``'s Python."""
    with tempfile.TemporaryDirectory(prefix="bench-guard-") as hermes_home:
        environ = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": HOME, "HERMES_HOME": hermes_home,
                   "LANG": "C.UTF-8"}
        done = subprocess.run(
            [str(venv / "bin" / "python"), "-c", _HERMES_TIMER, str(repeat)], input=json.dumps(commands),
            capture_output=True, text=True, check=True, cwd=hermes_home, env=environ,
        )
    return float(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hermes-venv", type=Path, help="a virtualenv with hermes-agent==0.19.0 installed")
    parser.add_argument("--repeat", type=int, default=200, help="times each command is judged in a row")
    args = parser.parse_args()

    commands = corpus()
    hermes = {command: entry["verdict"] for command, entry in
              json.loads((FIXTURES / "guard_verdicts.json").read_text(encoding="utf-8"))["verdicts"].items()}
    ours = {command: judge(command, HOME).verdict for command in commands}
    agreed = sum(ours[command] == hermes[command] for command in commands)
    print(f"corpus: {len(commands)} commands; agreement with Hermes 0.19.0: {agreed / len(commands):.1%} "
          f"({len(commands) - agreed} differ)")
    ours_counts = collections.Counter(ours.values())
    hermes_counts = collections.Counter(hermes[command] for command in commands)
    print(f"{'class':<12} {'ours':>6} {'Hermes':>7}")
    for name in CLASSES:
        print(f"{name:<12} {ours_counts[name]:>6} {hermes_counts[name]:>7}")
    print(f"CPU time per command, median over the corpus: ours {ours_median_us(commands, args.repeat):.1f} µs", end="")
    if args.hermes_venv is None:
        print(" (Hermes: pass --hermes-venv to time it)")
    else:
        print(f", Hermes {hermes_median_us(args.hermes_venv, commands, max(1, args.repeat // 10)):.1f} µs")


if __name__ == "__main__":
    main()
