"""The session's CPU per tool turn, in one process, for two trees alternated (before/after).

Run: .venv/bin/python bench/bench_turn_loop.py --base /tmp/base [--rounds 4] [--sessions 100] [--turns 5]

Each run is its own process, started from one tree with that tree's venv: ``--sessions`` sessions of the
test harness (the real session actor and SDK clients, an in-memory store, tools unjailed) each run
``--turns`` turns of one ``terminal true`` between two model calls, against one out-of-process fake model
(``vs_hermes/fake_model.py``, 50 ms). It prints the process's CPU and its event loop's thread CPU per
turn: the session's own work, without the daemon's control socket, jail and SQLite writer (the whole
daemon's figures are ``vs_hermes/drive_actors.py turns``'s). On the shared 2-core machine the same tree
against itself came out up to 8 % apart over six pairs: run many rounds, and count what a change removes.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "vs_hermes"))

_FIGURES = re.compile(r"process ([\d.]+) ms/turn, loop ([\d.]+) ms/turn")


def _one_tree(url: str, sessions: int, turns: int) -> None:
    """In a tree's own process: run the sessions and print the figures."""
    sys.path.insert(0, ".")
    import attrs
    import trio

    from tests.session.harness import Harness, open_harness, run_turn

    @attrs.define
    class RemoteModel:
        base_url: str

    async def session(h: Harness, done: list[int]) -> None:
        handle, events, _ = await h.start_session()
        for number in range(turns):
            finished, _ = await run_turn(handle, events, f"turn {number}: check the machine [[bench tools=1]]")
            if finished.final_text != "All checks passed.":
                raise RuntimeError(f"a turn failed: {finished}")
            done.append(1)

    async def main() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            async with open_harness(Path(tmp), provider=RemoteModel(url)) as h:
                async with trio.open_nursery() as nursery:  # warm-up: clients, imports, caches
                    for _ in range(5):
                        nursery.start_soon(session, h, [])
                done: list[int] = []
                cpu, loop, wall = time.process_time(), time.thread_time(), time.perf_counter()
                async with trio.open_nursery() as nursery:
                    for _ in range(sessions):
                        nursery.start_soon(session, h, done)
                cpu, loop, wall = time.process_time() - cpu, time.thread_time() - loop, time.perf_counter() - wall
        print(f"{len(done)} turns: process {cpu / len(done) * 1e3:.3f} ms/turn, loop {loop / len(done) * 1e3:.3f} "
              f"ms/turn, {len(done) / wall:.1f} turns/s", flush=True)

    trio.run(main)


def main() -> None:
    """Alternate the two trees (who goes first alternates by round) and print the medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="the other worktree (before), with its own .venv")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--child", default="", help=argparse.SUPPRESS)  # the fake model's URL, in a tree's process
    args = parser.parse_args()
    if args.child:
        _one_tree(args.child, args.sessions, args.turns)
        return
    from run import FakeModel

    trees = {"base": args.base.resolve(), "this tree": HERE.parent}
    server = FakeModel(0.05)
    figures: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
    try:
        for round_ in range(args.rounds):
            for name in list(trees) if round_ % 2 == 0 else list(trees)[::-1]:
                tree = trees[name]
                done = subprocess.run(
                    [str(tree / ".venv" / "bin" / "python"), str(Path(__file__).resolve()), "--base", str(tree),
                     "--child", server.url, "--sessions", str(args.sessions), "--turns", str(args.turns)],
                    cwd=tree, capture_output=True, text=True, timeout=900,
                )
                found = _FIGURES.search(done.stdout)
                if found is None:
                    print(f"{name}: FAILED: {done.stderr.strip()[-800:]}", flush=True)
                    continue
                figures[name].append((float(found[1]), float(found[2])))
                print(f"{name} round {round_}: {done.stdout.strip()}", flush=True)
    finally:
        server.stop()
    for name, runs in figures.items():
        if runs:
            print(f"{name} ({trees[name]}): process CPU per turn median {statistics.median(r[0] for r in runs):.3f} ms "
                  f"({' / '.join(f'{r[0]:.3f}' for r in runs)}), event loop {statistics.median(r[1] for r in runs):.3f} ms")


if __name__ == "__main__":
    main()
