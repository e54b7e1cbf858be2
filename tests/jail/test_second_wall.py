"""The second wall: a jail holds no privilege whoever runs the daemon, root or an ordinary user.

Each attack is one a prompt-injected model tried on a root daemon before (see :mod:`tests.jail.escapes`).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.jail.as_nobody import run_as_nobody, work
from tests.jail.escapes import EXPECTED, attempt

__all__ = ["work"]


def _expect(found: dict[str, dict[str, object]]) -> None:
    if "unavailable" in found:
        pytest.skip(f"no jail can run here: {found['unavailable']}")
    assert found == {"read-only": EXPECTED, "workspace-write": EXPECTED}


class TestAsRoot:
    """A root daemon's jails: no capability, the filter loaded, nothing of the host to reach."""

    async def test_every_attack_fails(self, work: Path) -> None:
        if os.geteuid() != 0:
            pytest.skip("the daemon is not root here")
        _expect(await attempt(work))
        assert not (work / "escaped").exists()


class TestAsOrdinaryUser:
    """An ordinary user's daemon's jails: the same answers as root's."""

    def test_every_attack_fails(self, work: Path) -> None:
        found, _ = run_as_nobody("tests.jail.escapes", work)
        _expect(found)
        assert not (work / "escaped").exists()
