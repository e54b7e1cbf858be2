"""Running a command in a jail and reading what it printed, for the jail tests."""

from __future__ import annotations

import os
from collections.abc import Mapping

import trio

from tests.jail.fixtures import namespace_pids
from tools.jail import HeadTailBuffer, JailedProcess, JailPolicy, Launcher, drain

BASE_ENV = {"PATH": os.environ.get("PATH", os.defpath), "LANG": "C.UTF-8"}


async def run(
    launcher: Launcher, policy: JailPolicy, command: str, *, cwd: str | None = None, env: Mapping[str, str] | None = None
) -> tuple[int, str]:
    """Run ``bash -c command`` under ``policy`` to its end; its exit status and output (stderr merged)."""
    process = await launcher.spawn(
        ["bash", "-c", command], policy=policy, cwd=cwd or policy.workspace, env=env or BASE_ENV, merge_stderr=True
    )
    return await finish(process)


async def finish(process: JailedProcess) -> tuple[int, str]:
    """Read ``process``'s output until it exits; its exit status and output."""
    output = HeadTailBuffer(1 << 20)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(drain, process.stdout, output)
        code = await process.wait()
    process.close_pipes()
    return code, output.render()


def namespace_alive(namespace: str) -> bool:
    """Whether any process still runs (not a zombie) in PID namespace ``namespace``."""
    for pid in namespace_pids(namespace):
        try:
            with open(f"/proc/{pid}/stat", "rb") as stat:
                state = stat.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if state not in (b"Z", b"X"):
            return True
    return False
