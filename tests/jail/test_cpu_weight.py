"""The daemon before the commands it started: every session's processes together weigh
``sandbox.tools_cpu_weight`` against the daemon's own 100 where the daemon can be their sibling (never
against other programs), and the daemon is back in its own group once its jails close."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

from config.sandbox import SandboxConfig
from tests.jail.as_nobody import work
from tests.jail.helpers import NoJail, open_daemon_jails
from tools.jail import SandboxMode
from tools.jail.cgroups import find_cgroups

__all__ = ["work"]

REPO = Path(__file__).parents[2]
# A session host's start of its jails, as a child of the daemon: where its groups went.
_HOST = (
    "import json; from tools.jail.cgroups import find_cgroups; tree = find_cgroups(10); "
    "print(json.dumps(tree.moved)); tree.close()"
)


def _own_cpu_group() -> str:
    """This process's ``cpu`` group (version 1), or its unified one."""
    groups = dict(line.split(":", 2)[1:] for line in Path("/proc/self/cgroup").read_text().splitlines())
    return groups.get("cpu", groups[""])


def _weight(directory: Path) -> int:
    """A group's cpu weight on the version 2 scale (version 1's ``cpu.shares`` 1024 is 100)."""
    shares = directory / "cpu.shares"
    return round(int(shares.read_text()) * 100 / 1024) if shares.exists() else int((directory / "cpu.weight").read_text())


@pytest.fixture
def as_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("control groups need root here")


@pytest.mark.usefixtures("as_root")
class TestDaemonFirst:
    """A root daemon weighs its sessions' processes below itself and gives its own group back at close."""

    async def test_sessions_weigh_a_tenth_of_the_daemon(self, work: Path) -> None:
        before = Path("/proc/self/cgroup").read_text()
        try:
            async with open_daemon_jails(work, SandboxConfig()) as jails:
                runtime = await jails.open_session("s1", SandboxMode.WORKSPACE_WRITE, str(work))
                cgroup = runtime.jail.policy.cgroup
                if cgroup is None or "cpu" not in cgroup.directories:
                    pytest.skip("no cpu control group for the daemon here")
                session, version = Path(cgroup.directories["cpu"]), cgroup.versions["cpu"]
                sessions = session.parent
                assert _weight(session) == 100  # the session's own share among sessions
                assert _weight(sessions) == 10
                assert jails.launcher is not None
                assert jails.launcher.status.limits["cpu_weight"].endswith(
                    "every session's processes together at 10 against the daemon's 100"
                )
                if version == 1:
                    # The daemon moved into the group the sessions' group was made in, weighted as both.
                    unit = sessions.parent
                    assert unit.name == f"hermes-actors-{os.getpid()}"
                    assert sessions.name == "sessions"
                    assert _own_cpu_group().endswith(f"/hermes-actors-{os.getpid()}")
                    assert str(os.getpid()) in (unit / "cgroup.procs").read_text().split()
                    assert _weight(unit) == 200
                else:
                    assert _own_cpu_group().endswith("/hermes-actors-daemon")
                await jails.close_session(runtime)
        except NoJail as exc:
            pytest.skip(f"no jail can run here: {exc}")
        if version == 1:
            assert Path("/proc/self/cgroup").read_text() == before
            assert not sessions.parent.exists()
        assert not session.exists()

    def test_equal_weight_leaves_the_tools_equals(self) -> None:
        tree = find_cgroups(100)
        try:
            if "cpu" not in tree.groups:
                pytest.skip("no cpu control group for the daemon here")
            assert _weight(Path(tree.groups["cpu"])) == 100
        finally:
            tree.close()

    def test_a_daemon_that_cannot_move_back_keeps_its_group(self, caplog: pytest.LogCaptureFixture) -> None:
        tree = find_cgroups(10)
        try:
            if tree.moved is None:
                pytest.skip("the daemon did not move here (no version 1 cpu group)")
            home, unit = tree.moved
            stuck = attrs.evolve(tree, moved=(os.path.join(home, "no-such-group"), unit))
            with caplog.at_level(logging.WARNING, logger="tools.jail.cgroups"):
                stuck.close()
            # Removing the group would have killed what is in it: the daemon.
            assert os.path.isdir(unit)
            assert str(os.getpid()) in Path(unit, "cgroup.procs").read_text().split()
            assert "cannot move the daemon back" in caplog.text
        finally:
            tree.close()
        assert not os.path.exists(tree.moved[1])

    def test_a_session_host_groups_beside_the_daemon_not_inside(self) -> None:
        tree = find_cgroups(10)
        try:
            if tree.moved is None:
                pytest.skip("the daemon did not move here (no version 1 cpu group)")
            home, unit = tree.moved
            child = subprocess.run([sys.executable, "-c", _HOST], cwd=REPO, capture_output=True, text=True, check=True)
            child_home, child_unit = json.loads(child.stdout)
            # Inside the daemon's group, its sessions would share the daemon's weight against other programs.
            assert (child_home, os.path.dirname(child_unit)) == (home, home)
            assert not os.path.exists(child_unit)
        finally:
            tree.close()
