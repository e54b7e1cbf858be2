"""Shared helpers of the terminal tests: contexts, configs and process checks."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import trio

from config.terminal import ApprovalsConfig, BackgroundConfig, TerminalConfig
from tests.jail.fixtures import Jails, host_pid
from tests.tools.helpers import model_view
from tools.background import ProcessTable
from tools.terminal import TerminalTools
from tools.testing import Approver, LocalToolContext

# Short grace and drain keep the kill paths fast on the real clock.
FAST = TerminalConfig(kill_grace_seconds=0.3, exit_drain_seconds=0.2)


def make_tools(config: TerminalConfig = FAST, approvals: ApprovalsConfig | None = None) -> TerminalTools:
    """A TerminalTools with fast kill timings."""
    return TerminalTools(config, approvals or ApprovalsConfig())


def make_ctx(
    jails: Jails,
    tmp_path: Path,
    *,
    nursery: trio.Nursery | None = None,
    approver: Approver | None = None,
    interactive: bool = True,
    background: BackgroundConfig | None = None,
) -> LocalToolContext:
    """A LocalToolContext working in ``tmp_path`` (home under it too), in the jail of ``jails``' mode."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    ctx = LocalToolContext(
        home=home, cwd=tmp_path, approver=approver, interactive=interactive, nursery=nursery,
        jail=jails.jail(tmp_path, home=home),
    )  # fmt: skip
    if background is not None:
        ctx.processes = ProcessTable(background)
    return ctx


async def call(tools: TerminalTools, ctx: LocalToolContext, **args: Any) -> dict[str, Any]:
    """Run the terminal handler and decode its JSON."""
    return await model_view(tools.terminal, args, ctx)


async def process(tools: TerminalTools, ctx: LocalToolContext, **args: Any) -> dict[str, Any]:
    """Run the process handler and decode its JSON."""
    return await model_view(tools.process, args, ctx)


def pid_alive(pid: int) -> bool:
    """True while ``pid`` is a live process (zombies, which nothing here reaps, count as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            stat = handle.read()
    except FileNotFoundError:
        return False
    state = stat.rsplit(")", 1)[1].split()[0]
    return state not in ("Z", "X")


async def wait_for_file(path: Path, timeout: float = 5.0) -> str:
    """Poll until ``path`` exists and is non-empty; return its text."""
    with trio.fail_after(timeout):
        while True:
            if path.exists():
                text = path.read_text()
                if text.strip():
                    return text
            await trio.sleep(0.02)


def note_pid(var: str, path: Path) -> str:
    """Shell code appending the pid in ``var`` (``$!``, ``$$``), its PID namespace and its start time to ``path``.

    A jailed process sees its own namespace's pids; the namespace lets :func:`read_pid` find the host's,
    and the start time keeps it from another jail's process of the same numbers.
    """
    return f"echo {var} $(readlink /proc/{var}/ns/pid) $(sed 's/.*) //' /proc/{var}/stat | cut -d' ' -f20) >> {path}"


def read_pid(path: Path) -> int:
    """The host pid of the first process noted in ``path`` by :func:`note_pid` (0 once it is gone)."""
    pid, namespace, start = path.read_text().split()[:3]
    return host_pid(int(pid), namespace, start)


def env_without(*names: str) -> dict[str, str]:
    """``os.environ`` minus ``names``."""
    return {k: v for k, v in os.environ.items() if k not in names}


async def wait_dead(pid: int, within: float = 2.0) -> bool:
    """True once ``pid`` is gone; signal delivery is asynchronous, so allow it a moment."""
    with trio.move_on_after(within):
        while pid_alive(pid):
            await trio.sleep(0.01)
        return True
    return False
