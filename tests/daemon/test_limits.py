"""The daemon's open-file limit: raised at start, never lowered, capped."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

from actors.platform.daemon.limits import MAX_OPEN_FILES
from tests.daemon.helpers import DaemonProcess

_HARD = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
# A hard limit a child may set: lowering one needs no privilege, raising it does.
_LIMIT = 4096 if _HARD == resource.RLIM_INFINITY else min(_HARD, 4096)
_PROBE = """
import resource, sys
resource.setrlimit(resource.RLIMIT_NOFILE, ({soft}, {hard}))
from actors.platform.daemon.limits import raise_open_file_limit
print(raise_open_file_limit({cap}), *resource.getrlimit(resource.RLIMIT_NOFILE))
"""


def _probe(soft: int, hard: int, cap: int = MAX_OPEN_FILES) -> list[int]:
    """In a child process (the limit is per process): set ``soft``/``hard``, raise; returned and actual limits."""
    code = _PROBE.format(soft=soft, hard=hard, cap=cap)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return [int(x) for x in out.stdout.split()]


def _soft_limit_of(pid: int) -> int:
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            return int(line.split()[3])
    raise AssertionError("no open-files line")


class TestRaise:
    """raise_open_file_limit takes the hard limit, capped, and never lowers the soft one."""

    def test_raised_to_the_hard_limit(self) -> None:
        assert _probe(256, _LIMIT) == [_LIMIT, _LIMIT, _LIMIT]

    def test_a_soft_limit_at_the_hard_one_stays(self) -> None:
        assert _probe(200, 200) == [200, 200, 200]

    def test_capped_below_a_higher_hard_limit(self) -> None:
        assert _probe(256, _LIMIT, cap=_LIMIT // 2) == [_LIMIT // 2, _LIMIT // 2, _LIMIT]

    def test_a_soft_limit_above_the_cap_is_not_lowered(self) -> None:
        assert _probe(_LIMIT - 1, _LIMIT, cap=_LIMIT // 2) == [_LIMIT - 1, _LIMIT - 1, _LIMIT]


def test_the_daemon_starts_with_the_raised_limit(tmp_path: Path) -> None:
    """A daemon started with the common soft limit of 1,024 (or less) runs with the hard limit."""
    hard = _HARD if _HARD != resource.RLIM_INFINITY else MAX_OPEN_FILES
    daemon = DaemonProcess(tmp_path / "home")
    daemon.preexec = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (min(256, hard), _HARD))
    daemon.start()
    try:
        assert daemon.process is not None
        assert _soft_limit_of(daemon.process.pid) == min(hard, MAX_OPEN_FILES)
    finally:
        daemon.stop()
