"""A daemon's start loads no library its configuration does not use: only its model's provider SDK (in a
worker thread, beside the rest of the start), no API server, HTML parser or platform client unless configured
(checked on the real ``hermes-actors daemon``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.daemon.helpers import DaemonProcess, run_cli
from tests.runtime.test_start_imports import ON_USE

#: What a daemon whose model speaks Chat Completions loads ahead of its first call (the tests' homes do).
PRELOADED = {"openai", "pydantic"}

#: ``-X importtime``'s line for one module: ``import time: SELF | CUMULATIVE | NAME`` (indented by depth).
_IMPORT_LINE = re.compile(r"^import time:\s+\d+ \|\s+\d+ \| +(\S+)$", re.MULTILINE)


def imported(log: str) -> set[str]:
    """The top-level packages a process imported, from its ``-X importtime`` report."""
    return {name.partition(".")[0] for name in _IMPORT_LINE.findall(log)}


class TestDaemonStartImports:
    """A daemon serves its control socket without the heavy libraries, and loads its model's SDK unasked."""

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
        # The daemon's stop waits for the SDK's load, so the report holds it though no model was called.
        assert PRELOADED <= loaded, sorted(PRELOADED - loaded)
        assert not loaded & (set(ON_USE) - PRELOADED), sorted(loaded & (set(ON_USE) - PRELOADED))
