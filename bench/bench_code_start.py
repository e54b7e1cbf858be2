"""execute_code's start, phase by phase: from the tool call to the script's first line, jailed (the default
``workspace-write``) through the daemon's real launcher, and the CPU it costs (not a timed test).

Each run's timestamps (wall clock, ``time.time()``, the script's own first line included):
- ``setup``: ``Sandbox.run()`` -> the launcher asked to spawn (directory, files, socket, RPC server, env);
- ``spawn``: the launcher asked -> the jail's process started (bwrap forked; limits settled);
- ``to first line``: the process started -> the script's first line ran (bwrap's mounts, python's start);
- ``line back``: the first line ran -> its bytes reached the daemon's capture;
- ``total``: ``Sandbox.run()`` -> the first line ran (the vs_hermes row's span, less the session's path);
- ``line to call``: the first line ran -> its first tool call reached the session (``import hermes_tools``,
  the connection, the token);
and per run the daemon's CPU (this process, its threads) and the script's (python's start, ``import hermes_tools``
and its first call, as the script reads its own ``time.process_time()``).

Run: ``.venv/bin/python bench/bench_code_start.py [runs]``; ``--trees A B`` alternates runs of two source trees
(each in its own process, ABAB) and prints both.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SCRIPT = 'import time\nprint("FIRST", repr(time.time()), flush=True)\nimport hermes_tools\nhermes_tools.read_file("x")\nprint("CPU", time.process_time())\n'
PHASES = ("setup", "spawn", "to first line", "line back", "total", "line to call", "daemon CPU", "script CPU")


def _cpu() -> float:
    # The script's CPU is its own report: RUSAGE_CHILDREN counted about 1.2 ms a run, bwrap's alone.
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _one(jail: Any, base_dir: str, spares: Any) -> dict[str, float]:
    from actors.sandbox import Sandbox
    from config.sandbox import CodeExecutionConfig

    from tools.results import ToolReply

    marks: dict[str, float] = {}
    _MARKS[:] = [marks]

    async def first_call(name: str, args: dict[str, Any]) -> ToolReply:
        marks["called"] = time.time()
        return ToolReply('{"content": ""}')

    options: dict[str, Any] = {"spares": spares} if spares is not None else {}
    sandbox = Sandbox(
        SCRIPT, call_tool=first_call, allowed_tools=frozenset({"read_file", "write_file", "search_files", "terminal"}),
        config=CodeExecutionConfig(), base_dir=base_dir, jail=jail, **options,
    )  # fmt: skip
    append = sandbox._stdout.append

    def first_chunk(chunk: bytes) -> None:
        marks.setdefault("received", time.time())
        append(chunk)

    sandbox._stdout.append = first_chunk  # type: ignore[method-assign]  # the bench times the first chunk
    cpu = _cpu()
    start = time.time()
    result = await sandbox.run()
    _MARKS[:] = []  # a spare started from here on is the next run's
    if spares is not None:
        await spares.started()  # the model's turn: the next run's spare starts meanwhile, counted in this run's CPU
    cpu = _cpu() - cpu
    assert result.exit_code == 0, result
    words = result.output.split()
    line, script_cpu = float(words[1]), float(words[3])
    return {
        "setup": marks["spawn_asked"] - start, "spawn": marks["spawned"] - marks["spawn_asked"],
        "to first line": line - marks["spawned"], "line back": marks["received"] - line, "total": line - start,
        "line to call": marks["called"] - line,
        "daemon CPU": cpu, "script CPU": script_cpu,
    }  # fmt: skip


#: The running run's timestamps (empty between runs), where the spawn (or the spare's go) writes them.
_MARKS: list[dict[str, float]] = []


def _timed(owner: Any, name: str) -> None:
    """Time ``owner.name`` (the launcher's spawn, a spare's go) into the running run's marks."""
    inner = getattr(owner, name)

    async def timed(*args: Any, **kwargs: Any) -> Any:
        marks = _MARKS[0] if _MARKS else {}
        marks["spawn_asked"] = time.time()
        process = await inner(*args, **kwargs)
        marks["spawned"] = time.time()
        return process

    setattr(owner, name, timed)


async def _runs(runs: int, spare: bool) -> list[dict[str, float]]:
    import trio

    from config.sandbox import SandboxConfig
    from tools.jail import SandboxMode, SessionJail, build_policy, open_launcher

    root = Path(tempfile.mkdtemp(prefix="hx-bcs-", dir="/tmp"))
    try:
        workspace, tmp = root / "work", root / "runtime" / "s" / "tmp"
        workspace.mkdir(parents=True)
        tmp.mkdir(parents=True)
        async with open_launcher(SandboxConfig()) as launcher, trio.open_nursery() as nursery:
            if not launcher.status.available:
                raise SystemExit(f"no jail here: {launcher.status}")
            policy = build_policy(
                SandboxConfig(), mode=SandboxMode.WORKSPACE_WRITE, workspace=str(workspace), tmp_dir=str(tmp),
                daemon_home=str(root / "home"), runtime_dirs=[str(root / "runtime")],
            )  # fmt: skip
            _timed(launcher, "spawn")
            spares = None
            if spare:
                from actors.sandbox.spare import Spare, SpareInterpreters

                _timed(Spare, "go")
                spares = SpareInterpreters(nursery.start_soon, idle_seconds=300)
            jail = SessionJail(policy, launcher)
            base = root / "runtime" / "s"
            await _one(jail, str(base), spares)  # warm-up
            samples = [await _one(jail, str(base), spares) for _ in range(runs)]
            nursery.cancel_scope.cancel()
            return samples
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _report(label: str, samples: list[dict[str, float]]) -> None:
    print(f"{label} ({len(samples)} runs), median ms:")
    for phase in PHASES:
        values = [sample[phase] * 1000 for sample in samples]
        print(f"  {phase:<14} {statistics.median(values):7.2f}  (p25 {_quantile(values, 0.25):.2f}, p75 {_quantile(values, 0.75):.2f})")


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _child(runs: int, spare: bool) -> None:
    import json

    import trio

    print(json.dumps(trio.run(_runs, runs, spare)))


def _modes(tree: str, cold_too: bool) -> list[str]:
    """How a tree starts its runs: with a spare interpreter where it has one (and cold too if asked), else cold."""
    if not os.path.exists(os.path.join(tree, "actors", "sandbox", "spare.py")):
        return ["cold"]
    return ["spare", "cold"] if cold_too else ["spare"]


def _alternate(trees: list[str], rounds: int, runs: int, cold_too: bool) -> None:
    import json

    samples: dict[str, list[dict[str, float]]] = {}
    for _ in range(rounds):
        for tree in trees:
            for mode in _modes(tree, cold_too):
                python = os.path.join(tree, ".venv", "bin", "python")
                out = subprocess.run(
                    [python, __file__, "--child", *(["--spare"] if mode == "spare" else []), str(runs)], cwd=tree,
                    check=True, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": tree},
                )  # fmt: skip
                samples.setdefault(f"{tree} ({mode})", []).extend(json.loads(out.stdout.splitlines()[-1]))
    for label, values in samples.items():
        _report(label, values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=int, nargs="?", default=30)
    parser.add_argument("--trees", nargs="+", help="source trees to alternate (each with its .venv)")
    parser.add_argument("--rounds", type=int, default=4, help="with --trees: alternations")
    parser.add_argument("--cold-too", action="store_true", help="with --trees: a tree with spares also runs cold")
    parser.add_argument("--spare", action="store_true", help="this tree: each run takes the spare the last one left")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.runs, args.spare)
    elif args.trees:
        _alternate(args.trees, args.rounds, args.runs, args.cold_too)
    else:
        import trio

        _report("this tree", trio.run(_runs, args.runs, args.spare))


if __name__ == "__main__":
    main()
