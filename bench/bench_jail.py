"""Benchmark of the jail: prints its figures, jailed and full-access side by side (not a timed test).

Figures (both modes in one run, samples interleaved so load hits both alike):
- the launcher alone: spawn -> exit of ``true``;
- foreground ``terminal("true")`` end to end through ``dispatch``; target <= 8 ms median jailed;
- ``execute_code`` tool call -> first RPC served; target <= 25 ms median jailed.

Run: ``.venv/bin/python bench/bench_jail.py [runs]``
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio

from actors.sandbox import Sandbox
from bench_terminal import _report  # the same figure line as the terminal's benchmark
from config.sandbox import CodeExecutionConfig, SandboxConfig
from config.terminal import ApprovalsConfig, TerminalConfig
from tools.dispatch import dispatch
from tools.jail import Launcher, SandboxMode, SessionJail, build_policy, open_launcher
from tools.registry import ToolRegistry
from tools.terminal import register_terminal_tools
from tools.testing import LocalToolContext

MODES = (SandboxMode.WORKSPACE_WRITE, SandboxMode.FULL_ACCESS)
FIRST_RPC = "from hermes_tools import read_file\nread_file('x')\n"


def _jail(launcher: Launcher, mode: SandboxMode, root: Path) -> SessionJail:
    workspace, tmp = root / mode.value / "work", root / mode.value / "runtime" / "s" / "tmp"
    workspace.mkdir(parents=True)
    tmp.mkdir(parents=True)
    policy = build_policy(
        SandboxConfig(), mode=mode, workspace=str(workspace), tmp_dir=str(tmp),
        daemon_home=str(root / "home"), runtime_dirs=[str(root / mode.value / "runtime")],
    )  # fmt: skip
    return SessionJail(policy, launcher)


async def _interleaved(runs: int, probes: dict[SandboxMode, Callable[[], Awaitable[float]]]) -> dict[SandboxMode, list[float]]:
    samples: dict[SandboxMode, list[float]] = {mode: [] for mode in probes}
    for mode, probe in probes.items():
        await probe()  # warm-up
    for _ in range(runs):
        for mode, probe in probes.items():
            samples[mode].append(await probe())
    return samples


async def _spawn_true(jail: SessionJail) -> float:
    start = time.perf_counter()
    process = await jail.spawn(["true"], cwd=jail.policy.workspace, env={"PATH": os.defpath})
    await process.wait()
    process.close_pipes()
    return time.perf_counter() - start


def _terminal_probe(registry: ToolRegistry, ctx: LocalToolContext) -> Callable[[], Awaitable[float]]:
    async def probe() -> float:
        start = time.perf_counter()
        result = json.loads((await dispatch(registry, "terminal", {"command": "true"}, ctx)).text)
        elapsed = time.perf_counter() - start
        assert result["exit_code"] == 0, result
        return elapsed

    return probe


def _first_rpc_probe(jail: SessionJail, base_dir: str) -> Callable[[], Awaitable[float]]:
    async def probe() -> float:
        first: list[float] = []

        async def call_tool(name: str, args: dict[str, Any]) -> str:
            first.append(time.perf_counter())
            return json.dumps({"content": ""})

        sandbox = Sandbox(
            FIRST_RPC, call_tool=call_tool, allowed_tools=frozenset({"read_file"}), config=CodeExecutionConfig(),
            base_dir=base_dir, jail=jail,
        )  # fmt: skip
        start = time.perf_counter()
        result = await sandbox.run()
        assert result.exit_code == 0 and first, result
        return first[0] - start

    return probe


async def main(runs: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="hx-bj-", dir="/tmp"))
    try:
        async with open_launcher(SandboxConfig()) as launcher:
            print(f"jail: {launcher.status}")
            if not launcher.status.available:
                return
            jails = {mode: _jail(launcher, mode, root) for mode in MODES}
            samples = await _interleaved(runs, {mode: (lambda j=jail: _spawn_true(j)) for mode, jail in jails.items()})
            for mode in MODES:
                _report(f"launcher spawn -> exit of true [{mode.value}]", samples[mode])
            registry = ToolRegistry()
            register_terminal_tools(registry, TerminalConfig(), ApprovalsConfig())
            contexts = {
                mode: LocalToolContext(home=root / "home", cwd=jail.policy.workspace, jail=jail) for mode, jail in jails.items()
            }
            samples = await _interleaved(runs, {mode: _terminal_probe(registry, ctx) for mode, ctx in contexts.items()})
            for mode in MODES:
                _report(f'terminal("true") via dispatch [{mode.value}]', samples[mode])
            base = tempfile.mkdtemp(prefix="hx-bs-", dir="/tmp")
            samples = await _interleaved(max(runs // 4, 10), {mode: _first_rpc_probe(jail, base) for mode, jail in jails.items()})
            for mode in MODES:
                _report(f"execute_code call -> first RPC served [{mode.value}]", samples[mode])
            shutil.rmtree(base, ignore_errors=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    trio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 200)
