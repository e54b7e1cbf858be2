"""How much of the machine the turns workload keeps busy, and where the daemon's event loop is meanwhile.

Run: .venv/bin/python bench/bench_saturation.py [--sessions 200 50] [--turns 5] [--rounds 2] [--hosts 1 auto]
     [--trees TREE ...] [--weighted]

The side-by-side harness's ``turns`` workload (``bench/vs_hermes``: each turn one model call asking for
``terminal true``, the command, one more model call; default config, jailed, unpinned; one fake model,
50 ms before each reply) on each tree's daemon (``--trees``: worktrees with their own ``.venv``, run
alternately, ABAB; default this one), with each ``daemon.hosts`` value of ``--hosts``. Every 100 ms it reads
each event loop's scheduler counters (``/proc/<pid>/task/<pid>/schedstat``: the daemon's main thread, and
each session host's) and the CPU of the daemon's process tree, the fake model and this driver. Per run:

- turns/s, and CPU per turn of the daemon's tree (its tools' processes included), the model and the driver;
- **busy**: that CPU over the wall time, as a share of the machine's cores (what is left is the share the
  workload leaves idle);
- per event loop, the share of the wall time it ran, waited for a CPU (runnable, not running), and slept
  (nothing to do: every session waited on something else), over the whole run and split at the moment the
  last session's first turn ended (the first turns start every session's resident jailed shell).

A loop that is runnable (running or waiting) nearly all the time while the machine has idle cores is the
serial point. ``--weighted`` (root, the version 1 ``cpu`` hierarchy) runs everything it starts in a control
group of its own with the largest ``cpu.shares``, so that on a machine shared with other work the workload
gets the CPU it asks for and the figures read as on an idle machine (the others get what it leaves).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent / "vs_hermes"))

import drive_actors  # noqa: E402
from run import ROOT, FakeModel, _commit  # noqa: E402

PROMPT = "turn {n}: check the machine [[bench tools=1]]"
SAMPLE_SECONDS = 0.1
#: The largest ``cpu.shares`` (version 1): the default is 1024.
_SHARES_MAX = 262144


class NoWeightedGroup(RuntimeError):
    """``--weighted`` asked for a control group this process cannot make."""


@contextlib.contextmanager
def weighted_group() -> Iterator[str]:
    """This process (and all it starts after) in a version 1 ``cpu`` group with the largest share.

    Raises:
        NoWeightedGroup: no version 1 ``cpu`` hierarchy is mounted, or the group cannot be made (not root).
    """
    root = next((fields[4] for fields in (line.split() for line in open("/proc/self/mountinfo", encoding="utf-8"))
                 if fields[fields.index("-") + 1] == "cgroup" and "cpu" in fields[fields.index("-") + 3].split(",")),
                None)
    if root is None:
        raise NoWeightedGroup("--weighted needs the version 1 cpu hierarchy, and none is mounted")
    group = os.path.join(root, f"bench-saturation-{os.getpid()}")
    try:
        os.mkdir(group)
        Path(group, "cpu.shares").write_text(str(_SHARES_MAX))
        Path(group, "cgroup.procs").write_text(str(os.getpid()))
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.rmdir(group)
        raise NoWeightedGroup(f"cannot make the weighted group {group}: {exc.strerror}") from exc
    try:
        yield group
    finally:
        Path(root, "cgroup.procs").write_text(str(os.getpid()))
        with contextlib.suppress(OSError):
            os.rmdir(group)


def _schedstat(pid: int) -> tuple[int, int]:
    """Nanoseconds thread ``pid`` (a process's main thread) ran, and waited runnable for a CPU."""
    try:
        with open(f"/proc/{pid}/task/{pid}/schedstat", encoding="ascii") as handle:
            ran, waited, _ = handle.read().split()
    except (OSError, ValueError):
        return 0, 0
    return int(ran), int(waited)


class Sampler:
    """Samples the event loops' scheduler counters every ``SAMPLE_SECONDS`` on a thread of its own."""

    def __init__(self, loops: dict[str, int]) -> None:
        self._loops = loops
        self.samples: list[tuple[float, dict[str, tuple[int, int]]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Sampler:
        self._take()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._take()

    def _take(self) -> None:
        self.samples.append((time.perf_counter(), {name: _schedstat(pid) for name, pid in self._loops.items()}))

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_SECONDS):
            self._take()

    def shares(self, start: float, end: float) -> dict[str, tuple[float, float, float]]:
        """Per loop, between the samples nearest ``start`` and ``end``: the share of the wall time it ran,
        waited for a CPU, and slept."""
        first = min(self.samples, key=lambda sample: abs(sample[0] - start))
        last = min(self.samples, key=lambda sample: abs(sample[0] - end))
        wall = (last[0] - first[0]) * 1e9
        out = {}
        for name in self._loops:
            ran = (last[1][name][0] - first[1][name][0]) / wall if wall > 0 else 0.0
            waited = (last[1][name][1] - first[1][name][1]) / wall if wall > 0 else 0.0
            out[name] = (ran, waited, max(0.0, 1.0 - ran - waited))
        return out


@contextlib.contextmanager
def fake_model(latency: float, weighted: bool) -> Iterator[FakeModel]:
    """The fake model (``latency`` before each reply), it and all started after it in the largest
    ``cpu.shares`` when ``weighted`` (see :func:`weighted_group`)."""
    with weighted_group() if weighted else contextlib.nullcontext():
        server = FakeModel(latency)
        try:
            yield server
        finally:
            server.stop()


def each_turn(d: drive_actors.Daemon, ids: list[str], turns: int) -> Iterator[tuple[str, int]]:
    """Send every session ``turns`` turns, each as soon as its previous one ended; yield (session id, turns it
    has had) as each ends.

    Raises:
        RuntimeError: a turn did not complete.
    """
    sent = dict.fromkeys(ids, 0)
    for session_id in ids:
        d.send(session_id, PROMPT.format(n=0))
        sent[session_id] = 1
    for _ in range(len(ids) * turns):
        while (message := drive_actors.finished(d.receive())) is None:
            pass
        if message["reason"] != "completed":
            raise RuntimeError(f"a turn ended {message['reason']}: {message}")
        session_id = message["session_id"]
        yield session_id, sent[session_id]
        if sent[session_id] < turns:
            d.send(session_id, PROMPT.format(n=sent[session_id]))
            sent[session_id] += 1


def one_run(server: FakeModel, tree: Path, sessions: int, turns: int, hosts: str) -> dict[str, Any]:
    """``sessions`` sessions x ``turns`` tool turns on ``tree``'s daemon; its figures."""
    drive_actors.DAEMON_ROOT = tree
    server.reset()
    with drive_actors.daemon(server.url, "default", ["terminal"], hosts) as d:
        ids = [d.create() for _ in range(sessions)]
        loops = {"daemon": d.process.pid}
        hosts_pids = [pid for pid in drive_actors._children(d.process.pid) if drive_actors._is_host(pid)]
        loops.update({f"host {n}": pid for n, pid in enumerate(sorted(hosts_pids), 1)})
        first_turns_left = sessions
        first_turns_end = 0.0
        done = 0
        model, tree_cpu, own, mine = server.cpu_seconds(), d.tree_cpu_seconds(), d.cpu_seconds(), time.process_time()
        with Sampler(loops) as sampler:
            start = time.perf_counter()
            for _, number in each_turn(d, ids, turns):
                done += 1
                if number == 1:
                    first_turns_left -= 1
                    if not first_turns_left:
                        first_turns_end = time.perf_counter()
            end = time.perf_counter()
        wall = end - start
        cpu = {"tree": d.tree_cpu_seconds() - tree_cpu, "model": server.cpu_seconds() - model,
               "driver": time.process_time() - mine}
        daemon_cpu = d.cpu_seconds() - own
    return {
        "turns": done, "wall_s": wall, "first_turns_s": first_turns_end - start,
        **{f"{k}_cpu_s": v for k, v in cpu.items()},
        "daemon_cpu_s": daemon_cpu, "busy": sum(cpu.values()) / wall / (os.cpu_count() or 1),
        "loops": sampler.shares(start, end), "loops_first": sampler.shares(start, first_turns_end),
        "loops_later": sampler.shares(first_turns_end, end),
    }


def _median(runs: list[dict[str, Any]], figure: Any) -> float:
    return statistics.median(figure(run) for run in runs)


def report(samples: dict[tuple[str, int, str], list[dict[str, Any]]], trees: list[Path]) -> None:
    """Print one table: a row per (tree, sessions, hosts), medians of its rounds."""
    names = {tree: f"{tree.name} {_commit(tree)}" for tree in trees}
    print("\n| tree | sessions x turns | daemon.hosts | turns/s "
          "| CPU per turn, tree (daemon's own) / model / driver (ms) | busy share of the machine | loop: ran / waited for a CPU / slept, whole run | first turns | later turns |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for (tree, sessions, hosts), runs in samples.items():
        ms = {k: f"{_median(runs, lambda r, k=k: r[f'{k}_cpu_s'] / r['turns'] * 1000):.2f}"
              for k in ("tree", "daemon", "model", "driver")}
        per_turn = f"{ms['tree']} ({ms['daemon']}) / {ms['model']} / {ms['driver']}"
        cells = []
        for key in ("loops", "loops_first", "loops_later"):
            loops = runs[0][key]
            cells.append("; ".join(
                f"{name} " + " / ".join(f"{_median(runs, lambda r, n=name, i=i, k=key: r[k][n][i]):.2f}"
                                        for i in range(3))
                for name in loops))
        print(f"| {names[Path(tree)]} | {sessions} x {runs[0]['turns'] // sessions} | {hosts} | "
              f"{_median(runs, lambda r: r['turns'] / r['wall_s']):.1f} | {per_turn} | "
              f"{_median(runs, lambda r: r['busy']):.2f} | {cells[0]} | {cells[1]} | {cells[2]} |")


def _progress(label: str, run: dict[str, Any]) -> None:
    per_turn = {k: run[f"{k}_cpu_s"] / run["turns"] * 1000 for k in ("tree", "daemon")}
    loops = {name: " / ".join(f"{share:.2f}" for share in shares) for name, shares in run["loops"].items()}
    print(f"  {label}: {run['turns'] / run['wall_s']:.1f} turns/s, busy {run['busy']:.2f}, CPU per turn: tree "
          f"{per_turn['tree']:.2f}, daemon {per_turn['daemon']:.2f}; loops {loops}", file=sys.stderr, flush=True)


def main() -> None:
    """Run the rounds (every tree, size and hosts value in turn, ABAB) and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, nargs="+", default=[200, 50])
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--hosts", nargs="+", default=["1"], help="daemon.hosts values: N or auto")
    parser.add_argument("--trees", type=Path, nargs="+", default=[ROOT], help="worktrees whose daemons run (ABAB)")
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--weighted", action="store_true", help="run under the largest cpu.shares (root)")
    args = parser.parse_args()
    with fake_model(args.latency, args.weighted) as server:
        print(f"load {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores, weighted: {args.weighted}", file=sys.stderr)
        samples: dict[tuple[str, int, str], list[dict[str, Any]]] = {}
        for _ in range(args.rounds):
            for sessions in args.sessions:
                for tree in args.trees:
                    for hosts in args.hosts:
                        run = one_run(server, tree.resolve(), sessions, args.turns, hosts)
                        samples.setdefault((str(tree.resolve()), sessions, hosts), []).append(run)
                        _progress(f"{tree.name} {sessions}x{args.turns} hosts={hosts}", run)
        print(f"load {os.getloadavg()[0]:.1f} at the end", file=sys.stderr)
    report(samples, [tree.resolve() for tree in args.trees])


if __name__ == "__main__":
    main()
