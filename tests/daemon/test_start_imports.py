"""A daemon's start loads no library its configuration does not use: no provider SDK before a model call, no
API server, HTML parser or platform client unless configured (checked on the real ``hermes-actors daemon``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.daemon.helpers import DaemonProcess, run_cli
from tests.runtime.test_start_imports import ON_USE

#: ``-X importtime``'s line for one module: ``import time: SELF | CUMULATIVE | NAME`` (indented by depth).
_IMPORT_LINE = re.compile(r"^import time:\s+\d+ \|\s+\d+ \| +(\S+)$", re.MULTILINE)


def imported(log: str) -> set[str]:
    """The top-level packages a process imported, from its ``-X importtime`` report."""
    return {name.partition(".")[0] for name in _IMPORT_LINE.findall(log)}


class TestDaemonStartImports:
    """A daemon with the default configuration serves its control socket without the heavy libraries."""

    def test_start_and_inspect(self, home: Path) -> None:
        daemon = DaemonProcess(home)
        # Python reports every module the process imports on stderr, which is the daemon's log here.
        daemon.extra_env["PYTHONPROFILEIMPORTTIME"] = "1"
        daemon.start()
        try:
            result = run_cli(home, "inspect", "sessions", "--json")
            assert result.returncode == 0, result.stderr
            assert json.loads(result.stdout)
        finally:
            daemon.stop()
        loaded = imported(daemon.log())
        assert {"trio", "httpx2"} <= loaded, "the report was read (the daemon's own libraries are in it)"
        assert not loaded & set(ON_USE), sorted(loaded & set(ON_USE))
