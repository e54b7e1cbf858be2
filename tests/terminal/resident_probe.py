"""A session's resident shell through a daemon's jails (``DaemonJails``), under the session's limits.

:func:`exercise` runs in-process (the suite runs as root: control groups) and, under ``setpriv``, as an
ordinary user (``python -m tests.terminal.resident_probe WORK``: the resource-limit fallbacks, which the
resident's init must hand on to every command as a jail per command has them).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import attrs
import trio

from config.sandbox import SandboxConfig, SandboxLimits
from config.terminal import TerminalConfig
from tests.jail.fixtures import namespace_pids
from tests.jail.helpers import BASE_ENV, NoJail, open_daemon_jails
from tools.jail import SandboxMode
from tools.terminal import run_foreground

LIMITS = SandboxLimits(pids=32, memory_mb=256, shm_mb=4, cpu_weight=50)
ON = TerminalConfig(kill_grace_seconds=0.3, exit_drain_seconds=0.2)
OFF = attrs.evolve(ON, resident_shell=False)
# What a command inherits of its jail's limits: processes, data size, nice value, /dev/shm's size.
LIMITS_SEEN = "ulimit -u; ulimit -d; nice; df -k /dev/shm | tail -1 | tr -s ' ' | cut -d' ' -f2"
REACH = (
    "for fd in /proc/1/fd/*; do readlink $fd >/dev/null 2>&1 && echo link $fd; echo x 2>/dev/null > $fd && echo wrote; "
    "done; head -c1 /proc/1/mem >/dev/null 2>&1 || echo no-mem; kill -9 1; echo signalled"
)


async def exercise(work: Path) -> dict[str, Any]:
    """Run a session's commands through its resident shell; what each wall showed."""
    config = SandboxConfig(limits=LIMITS)
    found: dict[str, Any] = {}
    try:
        async with open_daemon_jails(work, config) as jails:
            session = await jails.open_session("resident", SandboxMode.WORKSPACE_WRITE, str(work))
            jail = session.jail
            assert jail.shell is not None

            async def run(command: str, terminal: TerminalConfig = ON) -> str:
                result = await run_foreground(command, cwd=str(work), env=BASE_ENV, config=terminal, jail=jail)
                return result.output

            try:
                found["namespaces"] = len({await run("readlink /proc/self/ns/pid") for _ in range(3)})
                found["limits as a jail per command"] = await run(LIMITS_SEEN) == await run(LIMITS_SEEN, OFF)
                await run("setsid sleep 1000 & (setsid sleep 1000 &); touch /dev/shm/x")
                init, outer = jail.shell.init_pid, jail.shell.outer_pid
                assert init is not None and outer is not None
                namespace = os.readlink(f"/proc/{init}/ns/pid")
                found["left"] = [pid for pid in namespace_pids(namespace) if pid != init]
                found["shm"] = await run("ls -A /dev/shm")
                found["reach"] = await run(REACH)
                found["same init"] = jail.shell.init_pid == init
                found["started"] = jail.shell.started
            finally:
                await jails.close_session(session)
            found["after close"] = [os.path.exists(f"/proc/{pid}") for pid in (init, outer)]
    except NoJail as exc:
        return {"unavailable": str(exc)}
    return found


EXPECTED = {
    "namespaces": 1, "limits as a jail per command": True, "left": [], "shm": "", "reach": "no-mem\nsignalled",
    "same init": True, "started": 1, "after close": [False, False],
}  # fmt: skip
"""What :func:`exercise` finds, as root and as an ordinary user."""


if __name__ == "__main__":
    print(json.dumps(trio.run(exercise, Path(sys.argv[1]))))
