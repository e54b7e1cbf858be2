"""What one jailed ``terminal`` command costs the machine in CPU: the jail's processes and the launcher's share.

Each sample runs ``terminal("true")``'s command the way a session does (the terminal's wrapper script in
``bash -c``, its state pipe, the real launcher, the session's policy and control groups, ``workspace-write``)
``--runs`` times one after the other, and reports per command:

- ``jail``: the CPU of the processes the command started (the outer ``bwrap``, the jail's init, ``bash``),
  from a control group of this process's own (``bench/vs_hermes/tree_cpu.py``), less this process's own;
  their ``/proc`` ticks would miss the init and ``bash``, which the outer ``bwrap`` never waits for;
- ``launcher``: this process's own CPU (the command line, the fork, the placement in the session's groups,
  Trio), the share of the daemon's CPU a command costs;
- ``kthreads``: what the kernel's own threads did meanwhile (deferred frees of namespaces and filters); the
  whole machine's, so it includes other programs' and is coarse (clock ticks);
- ``jails``: how many jails the session started for the sample's commands and its warm-up (one with a
  resident shell, ``terminal.resident_shell``; one a command without);
- ``first``: the whole CPU (this process and its children) of another session's first command, which
  starts that session's resident shell where there is one, and of that session's end (the mean of
  ``--firsts`` sessions, one after the other).

``--base TREE`` runs the same samples with another worktree's code (its ``.venv``), alternating with this
tree's (ABAB), so before and after are measured under the same load. Medians of ``--rounds``.

Run: ``.venv/bin/python bench/bench_jail_cpu.py [--runs 100] [--rounds 5] [--firsts 10] [--base /tmp/base]``
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
KTHREADD = "2"


def _kthreads_seconds() -> float:
    """The CPU seconds of every kernel thread (the children of ``kthreadd``) so far."""
    total = 0
    with os.scandir("/proc") as entries:
        for entry in entries:
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/stat", encoding="ascii", errors="replace") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[1] == KTHREADD:
                total += int(fields[11]) + int(fields[12])
    return total / CLOCK_TICKS


def _own_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _sample(runs: int, firsts: int) -> dict[str, float]:
    """One sample in this process: ``runs`` terminal commands, then ``firsts`` sessions' first commands; CPU
    per command in milliseconds."""
    import trio

    sys.path.insert(0, str(HERE / "vs_hermes"))
    from tree_cpu import TreeCpu  # noqa: PLC0415 - the bench's own helper, beside it

    from config.sandbox import SandboxConfig  # noqa: PLC0415 - the tree under test is on PYTHONPATH
    from config.terminal import TerminalConfig  # noqa: PLC0415
    from tools.jail import SandboxMode, SessionJail, build_policy, open_launcher  # noqa: PLC0415
    from tools.terminal._foreground import run_foreground  # noqa: PLC0415
    from tools.terminal._shell import build_shell_env  # noqa: PLC0415

    root = Path(tempfile.mkdtemp(prefix="hx-bjc-", dir="/var/tmp"))
    tree = TreeCpu(f"hx-bjc-{os.getpid()}")
    tree.enter()
    try:
        workspace, tmp = root / "work", root / "runtime" / "s" / "tmp"
        workspace.mkdir(parents=True)
        tmp.mkdir(parents=True)
        config, terminal = SandboxConfig(), TerminalConfig()
        env = build_shell_env(os.environ)
        async with open_launcher(config) as launcher:
            if not launcher.status.available:
                raise SystemExit(f"no jail can run here: {launcher.status.error}")
            cgroup = await trio.to_thread.run_sync(launcher.open_limits, uuid.uuid4().hex[:12], config.limits)
            try:
                policy = build_policy(
                    config, mode=SandboxMode.WORKSPACE_WRITE, workspace=str(workspace), tmp_dir=str(tmp),
                    daemon_home=str(root / "home"), runtime_dirs=[str(root / "runtime")], cgroup=cgroup,
                )  # fmt: skip
                jail = SessionJail(policy, launcher)
                for _ in range(3):  # warm-up: the filter program, imports, the spawn threads
                    await run_foreground("true", cwd=str(workspace), env=env, config=terminal, jail=jail)
                group, own, kthreads = tree.seconds(), _own_seconds(), _kthreads_seconds()
                for _ in range(runs):
                    result = await run_foreground("true", cwd=str(workspace), env=env, config=terminal, jail=jail)
                    assert result.exit_code == 0 and result.shell is not None, result
                group, own = tree.seconds() - group, _own_seconds() - own
                kthreads = _kthreads_seconds() - kthreads
                # Other sessions' first commands: each starts that session's resident shell where there is one.
                first = tree.seconds()
                for _ in range(firsts):
                    other = SessionJail(policy, launcher)
                    await run_foreground("true", cwd=str(workspace), env=env, config=terminal, jail=other)
                    if hasattr(other, "aclose"):
                        await other.aclose()
                first = (tree.seconds() - first) / firsts
                # A tree with resident shells: how many jails the session started (1: one for every command).
                shell = getattr(jail, "shell", None)
                jails = float(shell.started) if shell is not None else float(runs + 3)
                if hasattr(jail, "aclose"):
                    await jail.aclose()
            finally:
                if cgroup is not None:
                    await trio.to_thread.run_sync(cgroup.remove)
    finally:
        tree.leave()
        shutil.rmtree(root, ignore_errors=True)
    per = 1000 / runs
    return {
        "jail": (group - own) * per, "launcher": own * per, "kthreads": kthreads * per, "jails": jails,
        "first": first * 1000,
        "method": tree.method,
    }  # fmt: skip


def _child(tree: Path, runs: int, firsts: int) -> dict[str, float]:
    """One sample in a fresh interpreter of ``tree``'s venv, with ``tree``'s code."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [str(tree / ".venv" / "bin" / "python"), __file__, "--sample", str(runs), str(firsts)],
        cwd=tree, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"the sample in {tree} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=100, help="commands per sample")
    parser.add_argument("--rounds", type=int, default=5, help="samples per tree, alternated")
    parser.add_argument("--base", type=Path, help="another worktree to measure alternately (before)")
    parser.add_argument("--firsts", type=int, default=10, help="sessions whose first command is measured, per sample")
    parser.add_argument("--sample", type=int, nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.sample is not None:
        import trio

        print(json.dumps(trio.run(_sample, *args.sample)))
        return
    trees = {"base": args.base.resolve()} if args.base else {}
    trees["this"] = HERE.parent
    samples: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for round_ in range(args.rounds):
        for name, tree in trees.items():
            sample = _child(tree, args.runs, args.firsts)
            samples[name].append(sample)
            print(f"round {round_ + 1} {name}: " + " ".join(f"{k} {v:.2f}" for k, v in sample.items() if k != "method"),
                  file=sys.stderr, flush=True)  # fmt: skip
    print(f"CPU per jailed terminal('true'), ms, median of {args.rounds} x {args.runs}; load {os.getloadavg()[0]:.1f}")
    print(f"  ({samples['this'][0]['method']})")
    for name, tree in trees.items():
        medians = {k: statistics.median(s[k] for s in samples[name]) for k in ("jail", "launcher", "kthreads", "jails", "first")}
        head = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        print(f"  {name:5s} {head.stdout.strip():9s} " + "  ".join(f"{k} {v:.2f}" for k, v in medians.items()))


if __name__ == "__main__":
    main()
