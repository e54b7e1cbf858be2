"""A session at its limits, through a daemon's jails (``DaemonJails``): what each limit did to it, and whether
another session kept working meanwhile.

:func:`exercise` runs in-process (the suite runs as root: control groups and a tmpfs ``/tmp``) and, under
``setpriv``, as an ordinary user (``python -m tests.jail.limits_probe WORK``: the resource-limit fallbacks).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import trio

from config.sandbox import SandboxConfig, SandboxLimits
from tests.jail.helpers import BASE_ENV, NoJail, finish, open_daemon_jails
from tools.jail import SandboxMode
from tools.jail.runtime import SessionRuntime

LIMITS = SandboxLimits(pids=32, memory_mb=64, tmp_mb=256, shm_mb=4, cpu_weight=50)

# Forks until the kernel refuses, each child sleeping; prints how many it got (perl: readable by any user).
_FORKS = (
    "my $n = 0; for (1..80) { my $p = fork(); last unless defined $p; if ($p == 0) { sleep 60; exit 0 } $n++ }"
    ' print "$n\\n"; kill "KILL", -$$;'
)
_ALLOCATE = 'my $x = "a" x (256 * 1024 * 1024); print "allocated\\n";'


async def _run(runtime: SessionRuntime, command: str) -> tuple[int, str]:
    process = await runtime.jail.spawn(["bash", "-c", command], cwd=runtime.jail.policy.workspace, env=BASE_ENV,
                                       merge_stderr=True)  # fmt: skip
    return await finish(process)


async def exercise(work: Path) -> dict[str, Any]:
    """Push one session past each limit while another runs a command; what happened."""
    config = SandboxConfig(limits=LIMITS)
    found: dict[str, Any] = {}
    try:
        async with open_daemon_jails(work, config) as jails:
            launcher, runtime_dir = jails.launcher, jails.runtime
            assert launcher is not None
            found["mechanisms"] = dict(launcher.status.limits)
            in_memory = runtime_dir.hold_in_memory(config.limits.tmp_mb)
            hog = await jails.open_session("hog", SandboxMode.WORKSPACE_WRITE, str(work))
            other = await jails.open_session("other", SandboxMode.WORKSPACE_WRITE, str(work))
            try:
                before = hog.jail.policy.cgroup.counters() if hog.jail.policy.cgroup else {}
                code, forks = await _run(hog, f"perl -e '{_FORKS}'")
                found["forks"] = int(forks.strip().splitlines()[-1]) if forks.strip() else forks
                code, allocated = await _run(hog, f"perl -e '{_ALLOCATE}'")
                found["allocation"] = "allocated" if "allocated" in allocated else f"refused (status {code})"
                found["shm"] = (await _run(hog, "dd if=/dev/zero of=/dev/shm/big bs=1M count=16 2>&1 | grep -c 'No space'"))[1]
                # In memory, /tmp counts toward the session's memory limit: 128 MB do not fit in 64.
                found["tmp"] = "stopped" if (await _run(hog, "dd if=/dev/zero of=/tmp/big bs=1M count=128"))[0] else "written"
                # What was written stays charged to the session until the file goes (as a file tool would do it).
                os.remove(os.path.join(hog.jail.policy.tmp_dir, "big"))
                after = hog.jail.policy.cgroup.counters() if hog.jail.policy.cgroup else {}
                found["counted"] = {name: after[name] > before.get(name, 0) for name in after}
                found["other session"] = (await _run(other, "echo still here"))[1]
                cgroup = hog.jail.policy.cgroup
                found["groups"] = sorted(cgroup.directories) if cgroup else []
                directories = list(cgroup.directories.values()) if cgroup else []
            finally:
                await jails.close_session(hog)
                await jails.close_session(other)
            found["groups left"] = [d for d in directories if os.path.exists(d)]
            found["in memory"] = in_memory
            runtime_dir.remove()
            found["mounted after remove"] = any(
                str(work) in line for line in Path("/proc/self/mountinfo").read_text().splitlines()
            )
    except NoJail as exc:
        return {"unavailable": str(exc)}
    return found


if __name__ == "__main__":
    print(json.dumps(trio.run(exercise, Path(sys.argv[1]))))
