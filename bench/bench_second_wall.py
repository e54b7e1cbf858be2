"""Benchmark of the jail's second wall: what a process start costs with it and without (not a timed test).

The tree under test and an older checkout (the commit before the second wall) each run the same probe in a
process of their own, rounds alternated so that load hits both alike. The probe opens a daemon's jails as a
daemon does (default ``sandbox`` config: ``workspace-write``, and in the new tree the session's control groups
and tmpfs ``/tmp`` where the daemon may make them), opens one session and times ``bash -c true`` from spawn to
exit through the session's jail.

A second figure, in the new tree alone: the same spawn in one session while its neighbour session sits at its
process limit (``pids: 64``) with every one of those processes spinning on the CPU: what "the other sessions
keep their speed" costs a session when its neighbour is hostile.

Run: ``.venv/bin/python bench/bench_second_wall.py --old DIR [--rounds 5] [--spawns 100]``
(``DIR``: e.g. ``git worktree add /tmp/hx-before <commit>``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

PROBE = """
import inspect, json, os, shutil, sys, tempfile, time, trio
from config.sandbox import SandboxConfig
from tools.jail import SandboxMode, open_launcher
from tools.jail.runtime import DaemonJails, RuntimeDir

async def main(spawns):
    root = tempfile.mkdtemp(prefix="hx-wall-bench-", dir="/var/tmp")
    home, work = os.path.join(root, "home"), os.path.join(root, "work")
    os.makedirs(home); os.makedirs(work)
    env = {"PATH": os.environ["PATH"], "LANG": "C.UTF-8"}
    async with open_launcher(SandboxConfig()) as launcher:
        runtime_dir = RuntimeDir.for_home(home, os.path.join(root, "user"))  # positional: the old tree names it tempdir
        runtime_dir.clean()
        jails = DaemonJails(config=SandboxConfig(), runtime=runtime_dir, home=home, launcher=launcher)
        runtime = await jails.open_session("bench", SandboxMode.WORKSPACE_WRITE, work)
        samples = []
        cpu = time.process_time()
        for _ in range(spawns + 5):
            started = time.perf_counter()
            process = await runtime.jail.spawn(["bash", "-c", "true"], cwd=work, env=env)
            await process.wait()
            samples.append((time.perf_counter() - started) * 1000)
            process.close_pipes()
        # The older tree closes a session by its id.
        named = "runtime" in inspect.signature(jails.close_session).parameters
        await jails.close_session(runtime if named else "bench")
        cpu = (time.process_time() - cpu) / (spawns + 5) * 1000
        runtime_dir.remove()
    shutil.rmtree(root)
    print(json.dumps({"samples": samples[5:], "cpu": cpu, "limits": getattr(launcher.status, "limits", {})}))

trio.run(main, int(sys.argv[1]))
"""


NEIGHBOUR = """
import json, os, shutil, sys, tempfile, time, trio
from config.sandbox import SandboxConfig, SandboxLimits
from tools.jail import SandboxMode, open_launcher
from tools.jail.runtime import DaemonJails, RuntimeDir

SPIN = "perl -e 'for (1..200) { my $p = fork(); last unless defined $p; if (!$p) { 1 while 1 } } sleep 600'"

async def timed(runtime, work, env, spawns):
    samples = []
    for _ in range(spawns):
        started = time.perf_counter()
        process = await runtime.jail.spawn(["bash", "-c", "true"], cwd=work, env=env)
        await process.wait()
        samples.append((time.perf_counter() - started) * 1000)
        process.close_pipes()
    return samples

async def main(spawns):
    root = tempfile.mkdtemp(prefix="hx-wall-bench-", dir="/var/tmp")
    home, work = os.path.join(root, "home"), os.path.join(root, "work")
    os.makedirs(home); os.makedirs(work)
    env = {"PATH": os.environ["PATH"], "LANG": "C.UTF-8"}
    config = SandboxConfig(limits=SandboxLimits(pids=64))
    async with open_launcher(config) as launcher:
        runtime_dir = RuntimeDir.for_home(home, os.path.join(root, "user"))
        runtime_dir.clean()
        jails = DaemonJails(config=config, runtime=runtime_dir, home=home, launcher=launcher)
        quiet = await jails.open_session("quiet", SandboxMode.WORKSPACE_WRITE, work)
        hog = await jails.open_session("hog", SandboxMode.WORKSPACE_WRITE, work)
        await timed(quiet, work, env, 5)
        alone = await timed(quiet, work, env, spawns)
        spinning = await hog.jail.spawn(["bash", "-c", SPIN], cwd=work, env=env)
        await trio.sleep(1)  # the hog reaches its limit
        beside = await timed(quiet, work, env, spawns)
        await spinning.stop(0)
        spinning.close_pipes()
        await jails.close_session(quiet)
        await jails.close_session(hog)
        runtime_dir.remove()
    shutil.rmtree(root)
    print(json.dumps({"alone": alone, "beside": beside}))

trio.run(main, int(sys.argv[1]))
"""


def _probe(tree: Path, spawns: int, probe: str = PROBE) -> dict[str, object]:
    python = Path(sys.executable)
    done = subprocess.run(
        [str(python), "-c", probe, str(spawns)], cwd=tree, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(tree)},
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"the probe failed in {tree}:\n{done.stderr}")
    result: dict[str, object] = json.loads(done.stdout)
    return result


def _figures(samples: list[float]) -> str:
    ordered = sorted(samples)
    p90 = ordered[int(len(ordered) * 0.9)]
    return f"median {statistics.median(ordered):.2f} ms (p90 {p90:.2f})"


def main() -> None:
    """Alternate the probe between the two trees and print both, and the difference of the medians."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--old", type=Path, required=True, help="a checkout of the commit before the second wall")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--spawns", type=int, default=100)
    args = parser.parse_args()
    new = Path(__file__).resolve().parents[1]
    trees = {"before": args.old.resolve(), "after": new}
    samples: dict[str, list[float]] = {name: [] for name in trees}
    cpu: dict[str, list[float]] = {name: [] for name in trees}
    limits: object = {}
    for _ in range(args.rounds):
        for name, tree in trees.items():
            found = _probe(tree, args.spawns)
            samples[name] += found["samples"]  # type: ignore[arg-type]  # the probe's JSON is untyped: these keys hold lists of numbers
            cpu[name].append(found["cpu"])  # type: ignore[arg-type]  # the probe's JSON is untyped: these keys hold numbers
            if name == "after":
                limits = found["limits"]
    print(f"spawn -> exit of `bash -c true` through a session's jail, {args.rounds} rounds x {args.spawns}, uid {os.geteuid()}")
    for name in trees:
        print(f"  {name:6} {_figures(samples[name])}, the daemon's CPU {statistics.mean(cpu[name]):.2f} ms a spawn")
    delta = statistics.median(samples["after"]) - statistics.median(samples["before"])
    print(f"  the second wall adds {delta:+.2f} ms a process start (target <= 2 ms)")
    print(f"  limits enforced by: {limits}")
    neighbour = _probe(new, args.spawns, NEIGHBOUR)
    print("the same spawn in a session whose neighbour spins 64 processes at its process limit:")
    print(f"  neighbour idle      {_figures(neighbour['alone'])}")  # type: ignore[arg-type]  # the probe's JSON is untyped: these keys hold lists of numbers
    print(f"  neighbour at limit  {_figures(neighbour['beside'])}")  # type: ignore[arg-type]  # the probe's JSON is untyped: these keys hold lists of numbers


if __name__ == "__main__":
    main()
