"""A session's limits: a session past each one is stopped there, with the kernel's count of it, while
another session keeps working; as root by control groups and a tmpfs, as an ordinary user by the
resource-limit fallbacks (see :mod:`tests.jail.limits_probe`)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from config.sandbox import SandboxLimits
from tests.jail.as_nobody import run_as_nobody, work
from tests.jail.limits_probe import LIMITS, exercise
from tools.jail.cgroups import CgroupTree
from tools.jail.limits import Fallbacks, choose_mechanisms, fallbacks_for, nice_for

__all__ = ["work"]


class TestAsRoot:
    """A root daemon enforces every limit by the session's control group and a tmpfs /tmp."""

    async def test_limits_hold_and_the_other_session_goes_on(self, work: Path) -> None:
        if os.geteuid() != 0:
            pytest.skip("control groups and tmpfs mounts need root here")
        found = await exercise(work)
        if "unavailable" in found:
            pytest.skip(f"no jail can run here: {found['unavailable']}")
        mechanisms = found.pop("mechanisms")
        if not mechanisms["pids"].startswith("cgroup") or not mechanisms["tmp_mb"].startswith("tmpfs"):
            pytest.skip(f"this machine gives the daemon no control groups or mounts: {mechanisms}")
        forks = found.pop("forks")
        # The jail's bwrap, its init, bash and perl count too.
        assert isinstance(forks, int) and LIMITS.pids - 8 <= forks < LIMITS.pids
        assert found == {
            "allocation": "refused (status 137)", "tmp": "stopped", "shm": "1\n",
            "counted": {"pids": True, "memory": True}, "other session": "still here\n",
            "groups": ["cpu", "memory", "pids"], "groups left": [], "in memory": True, "mounted after remove": False,
        }  # fmt: skip


class TestAsOrdinaryUser:
    """An ordinary user's daemon falls back to resource limits, and says that /tmp is not limited."""

    def test_fallbacks_hold(self, work: Path) -> None:
        found, stderr = run_as_nobody("tests.jail.limits_probe", work)
        if "unavailable" in found:
            pytest.skip(f"no jail for an ordinary user here: {found['unavailable']}")
        forks = found.pop("forks")
        assert isinstance(forks, int) and LIMITS.pids - 8 <= forks < LIMITS.pids
        assert found == {
            "mechanisms": {
                "pids": "rlimit: RLIMIT_NPROC per jail", "memory_mb": "rlimit: RLIMIT_DATA per process",
                "cpu_weight": "nice: per jail, weights below 100 only",
                "tmp_mb": "none: mounting a tmpfs needs CAP_SYS_ADMIN; /tmp is on the host's disk",
                "shm_mb": "tmpfs",
            },
            "allocation": "refused (status 12)", "tmp": "written", "shm": "1\n", "counted": {},
            "other session": "still here\n", "groups": [], "groups left": [], "in memory": False,
            "mounted after remove": False,
        }  # fmt: skip
        assert "cannot unmount" not in stderr


class TestMechanisms:
    """Each limit falls back as documented where the daemon has no control group for it."""

    def test_without_groups(self) -> None:
        none = CgroupTree({}, {}, {"pids": "no hierarchy"})
        assert choose_mechanisms(none, tmpfs=False, root=False)["pids"] == "rlimit: RLIMIT_NPROC per jail"
        # Root is exempt from RLIMIT_NPROC: no fallback can bind it.
        assert choose_mechanisms(none, tmpfs=False, root=True)["pids"].startswith("none: no hierarchy")
        mechanisms = choose_mechanisms(none, tmpfs=False, root=False)
        assert fallbacks_for(SandboxLimits(pids=64, memory_mb=100, cpu_weight=25), mechanisms) == Fallbacks(
            nproc=64, data_bytes=100 * 1024 * 1024, nice=6
        )

    def test_with_groups_nothing_falls_back(self) -> None:
        tree = CgroupTree({"pids": "/x", "memory": "/x", "cpu": "/x"}, {"pids": 2, "memory": 2, "cpu": 2}, {})
        mechanisms = choose_mechanisms(tree, tmpfs=True, root=True)
        assert mechanisms == {
            "pids": "cgroup v2", "memory_mb": "cgroup v2", "cpu_weight": "cgroup v2",
            "tmp_mb": "tmpfs: one for every session's /tmp, each one's share counted in its memory_mb", "shm_mb": "tmpfs",
        }  # fmt: skip
        assert not fallbacks_for(SandboxLimits(), mechanisms).needed

    def test_the_tools_weight_against_the_daemon_is_shown(self) -> None:
        tree = CgroupTree({"cpu": "/x/s"}, {"cpu": 1}, {}, ("/x", "/x/u"), 10)
        assert choose_mechanisms(tree, tmpfs=False, root=True)["cpu_weight"] == (
            "cgroup v1; every session's processes together at 10 against the daemon's 100"
        )

    def test_nice_matches_the_weight(self) -> None:
        assert [nice_for(w) for w in (100, 10_000, 80, 50, 1)] == [0, 0, 1, 3, 19]
