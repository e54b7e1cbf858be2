"""A job's script: named under the scripts directory only, run jailed, its failures reported, not raised."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from actors.platform.cron.script import CronScripts, ScriptRefused
from config.sandbox import SandboxConfig
from tests.jail.fixtures import launcher  # noqa: F401 (a fixture)
from tools.jail import Launcher
from tools.jail.runtime import DaemonJails, RuntimeDir


@pytest.fixture
def base() -> Iterator[Path]:
    # Outside /tmp: inside the jail, /tmp is the run's private one.
    path = Path(tempfile.mkdtemp(prefix="hx-cron-", dir="/var/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def scripts_in(base: Path, launcher: Launcher | None, timeout: float = 30.0) -> CronScripts:
    home = base / "home"
    (home / "scripts").mkdir(parents=True)
    (base / "work").mkdir()
    if launcher is None:
        return CronScripts(home, None, {}, timeout)
    if not launcher.status.available:
        pytest.skip(f"no jail can run here: {launcher.status.failed_step}")
    runtime = RuntimeDir.for_home(home, base / "runtime")
    runtime.prepare()
    jails = DaemonJails(config=SandboxConfig(mode="workspace-write"), runtime=runtime, home=str(home), launcher=launcher)
    return CronScripts(home, jails, {"PATH": "/usr/bin:/bin", "HX_SCRIPT_API_KEY": "hx-secret-4c2a"}, timeout)


class TestCheck:
    """Only a file under the scripts directory is a script, as in Hermes."""

    @pytest.mark.parametrize(
        ("name", "needle"),
        [("/etc/passwd", "path under"), ("~/x.sh", "path under"), ("../x.sh", "outside"), ("link.sh", "outside"),
         ("missing.sh", "No script"), ("", "path under")],
    )  # fmt: skip
    def test_refused(self, base: Path, name: str, needle: str) -> None:
        scripts = scripts_in(base, None)
        (base / "home/x.sh").write_text("echo x\n")
        (base / "home/scripts/link.sh").symlink_to(base / "home/x.sh")
        with pytest.raises(ScriptRefused, match=needle):
            scripts.check(name)

    def test_a_script_in_a_subdirectory(self, base: Path) -> None:
        scripts = scripts_in(base, None)
        (base / "home/scripts/watch").mkdir()
        (base / "home/scripts/watch/disk.py").write_text("print(1)\n")
        assert scripts.check("watch/disk.py") == base / "home/scripts/watch/disk.py"


class TestRun:
    """Bash or Python, jailed, in the job's directory; a failure or a timeout comes back as the run's text."""

    async def test_bash_and_python_in_the_jail(self, base: Path, launcher: Launcher) -> None:  # noqa: F811
        scripts = scripts_in(base, launcher)
        (base / "home/scripts/where.sh").write_text(
            f"pwd\ntest -e {base}/home/scripts/where.sh && echo home-visible || echo home-hidden\n"
            "echo key:${HX_SCRIPT_API_KEY:-none}\n"
        )
        (base / "home/scripts/sum.py").write_text("print(sum(range(5)))\n")
        ran = await scripts.run("where.sh", str(base / "work"))
        assert (ran.ok, ran.output) == (True, f"{base}/work\nhome-hidden\nkey:none")
        assert (await scripts.run("sum.py", str(base / "work"))).output == "10"

    async def test_a_failure_and_a_timeout(self, base: Path, launcher: Launcher) -> None:  # noqa: F811
        scripts = scripts_in(base, launcher, timeout=0.5)
        (base / "home/scripts/fail.sh").write_text("echo partial\necho broken >&2\nexit 3\n")
        (base / "home/scripts/hang.sh").write_text("sleep 30\n")
        failed = await scripts.run("fail.sh", str(base / "work"))
        assert not failed.ok and failed.output == "The script 'fail.sh' exited with status 3.\nstderr:\nbroken\nstdout:\npartial"
        hung = await scripts.run("hang.sh", str(base / "work"))
        assert (hung.ok, hung.output) == (False, "The script 'hang.sh' timed out after 0.5 s.")
        assert "No script" in (await scripts.run("gone.sh", str(base / "work"))).output

    async def test_nothing_runs_without_the_daemons_jails(self, base: Path) -> None:
        scripts = scripts_in(base, None)
        (base / "home/scripts/a.sh").write_text("echo a\n")
        ran = await scripts.run("a.sh", str(base / "work"))
        assert not ran.ok and "only in the daemon" in ran.output
