"""Start-up cost of the daemon and the CLI: wall time and CPU, medians (not a timed test).

Per round and per source tree (alternated, ABAB, each tree run with its own ``.venv``):
- ``daemon start``: ``hermes-actors daemon`` in a fresh home (the default configuration) from the spawn until
  its control socket answers a ``Hello``; CPU is the daemon's own and its waited children's (the jail's
  preflight) at that moment, read from ``/proc``;
- ``cli inspect``: ``hermes-actors inspect sessions --json`` against that daemon, end to end (the process's
  CPU from ``wait4``);
- ``import cli``: ``python -c 'import cli'``, the console script's module;
- ``import wiring``: ``python -c 'import actors.platform.daemon.wiring'``, what a daemon imports to build its
  tree.

Run: ``.venv/bin/python bench/bench_start.py --trees /tmp/base /work/wt [--rounds 5]`` (the first tree is the
"before"). Wall figures are noise on a shared machine; judge by CPU.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from control.client import ControlClient
from control.errors import DaemonNotRunning
from control.paths import DaemonPaths

ROWS = ("daemon start", "cli inspect", "import cli", "import wiring")
START_TIMEOUT = 120.0
TICKS = os.sysconf("SC_CLK_TCK")


def _env(home: Path) -> dict[str, str]:
    env = dict(os.environ, HERMES_ACTORS_HOME=str(home))
    env.pop("HERMES_ACTORS_PROFILE", None)
    return env


def _proc_cpu(pid: int) -> float:
    """The process's CPU so far and its waited children's, seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    # After the command's ")": state is field 3, so utime (14) .. cstime (17) are indices 11..14.
    return sum(int(value) for value in fields[11:15]) / TICKS


def _timed_child(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Run ``argv`` to its end: (wall, CPU) seconds."""
    start = time.perf_counter()
    process = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"{argv} exited with {process.returncode}")
    return wall, usage.ru_utime + usage.ru_stime


def _daemon_start(python: Path, tree: Path, home: Path) -> tuple[subprocess.Popen[bytes], float, float]:
    """Start a daemon of ``tree`` in ``home``: the process, its wall time and CPU until it answers."""
    paths = DaemonPaths(home)
    log = open(home.parent / "daemon.log", "ab")  # noqa: SIM115 - the daemon's; closed with the process
    start = time.perf_counter()
    process = subprocess.Popen(
        [str(python), "-m", "cli", "daemon"], cwd=tree, env=_env(home), stdin=subprocess.DEVNULL, stdout=log, stderr=log
    )
    log.close()
    deadline = start + START_TIMEOUT
    while time.perf_counter() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the daemon of {tree} exited: {(home.parent / 'daemon.log').read_text()}")
        try:
            ControlClient.connect(paths).close()
        except DaemonNotRunning:
            time.sleep(0.005)
            continue
        return process, time.perf_counter() - start, _proc_cpu(process.pid)
    process.kill()
    process.wait()
    raise SystemExit(f"the daemon of {tree} did not answer within {START_TIMEOUT} s")


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _round(tree: Path, inspects: int, record: Callable[[str, float, float], None]) -> None:
    python = tree / ".venv" / "bin" / "python"
    base = Path(tempfile.mkdtemp(prefix="ha-bs-"))
    home = base / "home"
    env = _env(home)
    try:
        process, wall, cpu = _daemon_start(python, tree, home)
        record("daemon start", wall, cpu)
        try:
            for _ in range(inspects):
                record("cli inspect", *_timed_child([str(python), "-m", "cli", "inspect", "sessions", "--json"], tree, env))
        finally:
            _stop(process)
        record("import cli", *_timed_child([str(python), "-c", "import cli"], tree, env))
        record("import wiring", *_timed_child([str(python), "-c", "import actors.platform.daemon.wiring"], tree, env))
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", nargs="+", type=Path, default=[Path(__file__).resolve().parents[1]])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--inspects", type=int, default=2, help="CLI inspects per daemon start")
    args = parser.parse_args()
    figures: dict[Path, dict[str, list[tuple[float, float]]]] = {tree: {row: [] for row in ROWS} for tree in args.trees}
    for number in range(args.rounds):
        for tree in args.trees:
            _round(tree, args.inspects, lambda row, wall, cpu, tree=tree: figures[tree][row].append((wall, cpu)))
        print(f"round {number + 1}/{args.rounds} done, load {os.getloadavg()[0]:.2f}", file=sys.stderr, flush=True)
    print(f"medians of {args.rounds} rounds, wall / CPU in ms; load average {os.getloadavg()}")
    print("| | " + " | ".join(str(tree) for tree in args.trees) + " |")
    print("| --- |" + " --- |" * len(args.trees))
    for row in ROWS:
        cells = []
        for tree in args.trees:
            walls, cpus = zip(*figures[tree][row])
            cells.append(f"{statistics.median(walls) * 1000:.0f} / {statistics.median(cpus) * 1000:.0f}")
        print(f"| {row} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
