"""The jail as an ordinary user (through ``setpriv``): mounts, /proc, stop with grace, setsid, kill -9."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

NOBODY = 65534

_PROBE = textwrap.dedent(
    """
    import json, os, sys, trio
    sys.path.insert(0, {root!r})
    from pathlib import Path
    from config.sandbox import SandboxConfig
    from tests.jail.fixtures import policy_for
    from tests.jail.helpers import BASE_ENV, PidNamespace, finish, run
    from tools.jail import SandboxMode, open_launcher

    async def main():
        work = Path({work!r})
        home = work / "home"
        home.mkdir()
        (home / ".env").write_text("KEY=secret")
        found = {{}}
        async with open_launcher(SandboxConfig()) as launcher:
            found["available"] = launcher.status.available
            if not launcher.status.available:
                found["error"] = launcher.status.error
                print(json.dumps(found)); return
            policy = policy_for(SandboxMode.WORKSPACE_WRITE, work, home=home)
            found["hidden"] = (await run(launcher, policy, f"cat {{home}}/.env 2>/dev/null || echo hidden"))[1]
            found["written"] = (await run(launcher, policy, "echo w > mine; cat mine"))[1]
            found["proc"] = int((await run(launcher, policy, "ls /proc | grep -c '^[0-9]'"))[1]) <= 4
            process = await launcher.spawn(
                ["bash", "-c", "setsid sleep 300 & trap 'echo trapped > /tmp/t; exit 0' TERM; "
                 "readlink /proc/self/ns/pid; wait"],
                policy=policy, cwd=str(work), env=BASE_ENV,
            )
            namespace = PidNamespace((await process.stdout.receive_some()).decode().strip())
            found["stopped"] = await process.stop(3.0)
            found["trapped"] = Path(policy.tmp_dir, "t").read_text()
            with namespace:
                with trio.move_on_after(5):
                    while namespace.alive():
                        await trio.sleep(0.01)
                found["left"] = namespace.alive()
            process.close_pipes()
        print(json.dumps(found))

    trio.run(main)
    """
)


@pytest.fixture
def nobody_dir() -> Iterator[Path]:
    """A working directory owned by the unprivileged user."""
    path = Path(tempfile.mkdtemp(prefix="hx-nobody-", dir="/tmp"))
    os.chown(path, NOBODY, NOBODY)
    yield path
    shutil.rmtree(path, ignore_errors=True)


class TestAsOrdinaryUser:
    """An unprivileged user gets the same jail as root: hidden paths, own /proc, grace, nothing left."""

    def test_same_jail(self, nobody_dir: Path) -> None:
        setpriv = shutil.which("setpriv")
        if os.geteuid() != 0 or setpriv is None:
            pytest.skip("needs root and setpriv to become an ordinary user")
        script = nobody_dir / "probe.py"
        script.write_text(_PROBE.format(root=str(Path(__file__).parents[2]), work=str(nobody_dir / "work")))
        (nobody_dir / "work").mkdir()
        os.chown(nobody_dir / "work", NOBODY, NOBODY)
        done = subprocess.run(
            [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", sys.executable, str(script)],
            capture_output=True, text=True, timeout=60, env={"PATH": os.environ["PATH"], "HOME": str(nobody_dir)},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        found = json.loads(done.stdout)
        if not found["available"]:
            pytest.skip(f"no jail for an ordinary user here: {found['error']}")
        assert found == {
            "available": True, "hidden": "hidden\n", "written": "w\n", "proc": True, "stopped": True,
            "trapped": "trapped\n", "left": False,
        }  # fmt: skip
