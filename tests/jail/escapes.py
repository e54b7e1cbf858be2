"""The second wall's attacks, as a prompt-injected model would try them from inside a jail.

:func:`attempt` runs every attack through a real launcher and returns what each got, so one test runs it
as root (in-process) and another as an ordinary user (``python -m tests.jail.escapes WORK`` under
``setpriv``): the same answers are expected of both.
"""

from __future__ import annotations

import json
import os
import platform
import secrets
import socket
import sys
from pathlib import Path
from typing import Any

import trio

from config.sandbox import SandboxConfig
from tests.jail.fixtures import policy_for
from tests.jail.helpers import BASE_ENV, run
from tools.jail import Launcher, SandboxMode, open_launcher

PROBE_SECRET = "hx-second-wall-secret-7d41"
"""In the environment of the process that starts the jails (the daemon, here): no jail may read it."""

#: System calls a jail never needs, by their x86-64 numbers; each must answer EPERM (1) from the filter.
REFUSED_X86_64 = {
    "mount": 165, "umount2": 166, "pivot_root": 155, "unshare": 272, "setns": 308, "ptrace": 101, "bpf": 321,
    "perf_event_open": 298, "keyctl": 250, "add_key": 248, "userfaultfd": 323, "open_by_handle_at": 304,
    "init_module": 175, "kexec_load": 246,
}  # fmt: skip

# perl: on every Debian system (perl-base is essential), and readable by any user, where our own
# interpreter may live in a directory only root can enter. Prints each call's errno (0: it went through).
_SYSCALLS = (
    'my %nr = split /[ =]/, $ARGV[0]; '
    'print join(" ", map { syscall($nr{$_}, 0, 0, 0, 0, 0); "$_=" . ($! + 0) } sort keys %nr), "\\n";'
)

#: What every attack must get, as root and as an ordinary user.
EXPECTED: dict[str, Any] = {
    "capabilities": "0000000000000000",
    "bounding set": "0000000000000000",
    "filter": "2",
    "umount /proc": "refused",
    "processes seen after umount": True,
    "daemon's environment": "",
    "remount / read-write": "refused",
    "write outside the roots": "refused",
    "new user namespace": "refused",
    "new mount namespace": "refused",
    "host /run socket": "hidden",
    "refused calls": {name: 1 for name in REFUSED_X86_64},
}


async def _attacks(launcher: Launcher, work: Path, mode: SandboxMode, run_socket: str | None) -> dict[str, Any]:
    policy = policy_for(mode, work, home=work / "home")
    env = {**BASE_ENV, "HX_TARGET": str(work.parent)}

    async def shell(command: str) -> str:
        return (await run(launcher, policy, command, env=env))[1].strip()

    found: dict[str, Any] = {
        "capabilities": await shell("grep ^CapEff: /proc/self/status | cut -f2"),
        "bounding set": await shell("grep ^CapBnd: /proc/self/status | cut -f2"),
        "filter": await shell("grep ^Seccomp: /proc/self/status | cut -f2"),
        "umount /proc": await shell("umount -l /proc >/dev/null 2>&1 && echo unmounted || echo refused"),
        "processes seen after umount": int(
            await shell("umount -l /proc 2>/dev/null; ls /proc | grep -c '^[0-9]'")
        ) <= 4,
        "daemon's environment": await shell(f"grep -l {PROBE_SECRET} /proc/*/environ 2>/dev/null; true"),
        "remount / read-write": await shell("mount -o remount,rw / >/dev/null 2>&1 && echo remounted || echo refused"),
        "write outside the roots": await shell(
            '{ echo x > "$HX_TARGET/escaped"; } 2>/dev/null && echo written || echo refused'
        ),
        "new user namespace": await shell("unshare -U true >/dev/null 2>&1 && echo made || echo refused"),
        "new mount namespace": await shell("unshare -m true >/dev/null 2>&1 && echo made || echo refused"),
        "host /run socket": "hidden" if run_socket is None else await shell(
            f"test -e {run_socket} && echo seen || echo hidden"
        ),
    }  # fmt: skip
    if platform.machine() == "x86_64":
        numbers = " ".join(f"{name}={number}" for name, number in REFUSED_X86_64.items())
        text = await shell(f"perl -e {_quoted(_SYSCALLS)} {_quoted(numbers)}")
        found["refused calls"] = {name: int(errno) for name, _, errno in (p.partition("=") for p in text.split())}
    else:
        found["refused calls"] = EXPECTED["refused calls"]
    return found


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _listening_socket_under_run() -> tuple[socket.socket | None, str | None]:
    """A Unix socket the host's ``/run`` holds (as a daemon's would), where this user may make one."""
    if not os.access("/run", os.W_OK):
        return None, None
    path = f"/run/hx-wall-{secrets.token_hex(6)}.sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    listener.listen(1)
    return listener, path


async def attempt(work: Path) -> dict[str, dict[str, Any]]:
    """Every attack from a read-only and a workspace-write jail; per mode, what each got."""
    os.environ[PROBE_SECRET] = "1"
    listener, path = _listening_socket_under_run()
    try:
        async with open_launcher(SandboxConfig()) as launcher:
            if not launcher.status.available:
                return {"unavailable": {"error": launcher.status.error}}
            found = {}
            for mode in (SandboxMode.READ_ONLY, SandboxMode.WORKSPACE_WRITE):
                directory = work / mode.value
                directory.mkdir()
                found[mode.value] = await _attacks(launcher, directory, mode, path)
            return found
    finally:
        if listener is not None and path is not None:
            listener.close()
            os.unlink(path)


if __name__ == "__main__":
    print(json.dumps(trio.run(attempt, Path(sys.argv[1]))))
