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


async def _one(jail: Any, base_dir: str) -> dict[str, float]:
    import trio  # noqa: F401  (imported with the tree under test)

    from actors.sandbox import Sandbox
    from config.sandbox import CodeExecutionConfig

    from tools.results import ToolReply

    marks: dict[str, float] = {}
    spawn = jail.spawn

    async def first_call(name: str, args: dict[str, Any]) -> ToolReply:
        marks["called"] = time.time()
        return ToolReply('{"content": ""}')

    async def timed_spawn(*args: Any, **kwargs: Any) -> Any:
        marks["spawn_asked"] = time.time()
        process = await spawn(*args, **kwargs)
        marks["spawned"] = time.time()
        return process

    sandbox = Sandbox(
        SCRIPT, call_tool=first_call, allowed_tools=frozenset({"read_file", "write_file", "search_files", "terminal"}),
        config=CodeExecutionConfig(), base_dir=base_dir, jail=_Timed(jail, timed_spawn),
    )  # fmt: skip
    append = sandbox._stdout.append

    def first_chunk(chunk: bytes) -> None:
        marks.setdefault("received", time.time())
        append(chunk)

    sandbox._stdout.append = first_chunk  # type: ignore[method-assign]  # the bench times the first chunk
    cpu = _cpu()
    start = time.time()
    result = await sandbox.run()
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


class _Timed:
    """The session's jail with its spawn timed."""

    def __init__(self, jail: Any, spawn: Any) -> None:
        self._jail, self.spawn = jail, spawn

    def __getattr__(self, name: str) -> Any:
        return getattr(self._jail, name)


async def _runs(runs: int) -> list[dict[str, float]]:
    from config.sandbox import SandboxConfig
    from tools.jail import SandboxMode, SessionJail, build_policy, open_launcher

    root = Path(tempfile.mkdtemp(prefix="hx-bcs-", dir="/tmp"))
    try:
        workspace, tmp = root / "work", root / "runtime" / "s" / "tmp"
        workspace.mkdir(parents=True)
        tmp.mkdir(parents=True)
        async with open_launcher(SandboxConfig()) as launcher:
            if not launcher.status.available:
                raise SystemExit(f"no jail here: {launcher.status}")
            policy = build_policy(
                SandboxConfig(), mode=SandboxMode.WORKSPACE_WRITE, workspace=str(workspace), tmp_dir=str(tmp),
                daemon_home=str(root / "home"), runtime_dirs=[str(root / "runtime")],
            )  # fmt: skip
            jail = SessionJail(policy, launcher)
            base = root / "runtime" / "s"
            await _one(jail, str(base))  # warm-up
            return [await _one(jail, str(base)) for _ in range(runs)]
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


def _child(runs: int) -> None:
    import json

    import trio

    print(json.dumps(trio.run(_runs, runs)))


def _alternate(trees: list[str], rounds: int, runs: int) -> None:
    import json

    samples: dict[str, list[dict[str, float]]] = {tree: [] for tree in trees}
    for _ in range(rounds):
        for tree in trees:
            python = os.path.join(tree, ".venv", "bin", "python")
            out = subprocess.run(
                [python, __file__, "--child", str(runs)], cwd=tree, check=True, capture_output=True, text=True,
                env={**os.environ, "PYTHONPATH": tree},
            )  # fmt: skip
            samples[tree].extend(json.loads(out.stdout.splitlines()[-1]))
    for tree in trees:
        _report(tree, samples[tree])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=int, nargs="?", default=30)
    parser.add_argument("--trees", nargs="+", help="source trees to alternate (each with its .venv)")
    parser.add_argument("--rounds", type=int, default=4, help="with --trees: alternations")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.runs)
    elif args.trees:
        _alternate(args.trees, args.rounds, args.runs)
    else:
        import trio

        _report("this tree", trio.run(_runs, args.runs))


if __name__ == "__main__":
    main()
