"""`hermes-actors demo`: the whole system against the scripted model, quickly, leaving nothing behind."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

from tests.daemon.helpers import REPO
from tests.terminal.helpers import pid_alive


class TestDemo:
    """The demo runs terminal, execute_code and two subagents, prints the tree and the answer, and cleans up."""

    def test_demo(self) -> None:
        """Exit 0 well under 30 s; tools, subagents, tree and answer shown; daemon gone and home removed."""
        env = {k: v for k, v in os.environ.items() if k != "HERMES_ACTORS_HOME"}
        started = time.monotonic()
        result = subprocess.run(
            [sys.executable, "-m", "cli", "demo"], cwd=REPO, env=env,
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
        )
        elapsed = time.monotonic() - started
        out = result.stdout
        assert result.returncode == 0, out[-2000:] + result.stderr[-2000:]
        assert elapsed < 30
        for expected in ("terminal", "execute_code", "delegate_task", "subagent:0", "subagent:1", "live tree", "final answer", "Demo complete"):
            assert expected in out, expected
        pid = int(re.search(r"daemon pid (\d+)", out).group(1))  # type: ignore[union-attr]  # no match fails the test on this line, which is the check
        home = re.search(r"home (\S+)", out).group(1)  # type: ignore[union-attr]  # no match fails the test on this line, which is the check
        deadline = time.monotonic() + 10
        while pid_alive(pid):
            assert time.monotonic() < deadline, "the demo's daemon is still running"
            time.sleep(0.1)
        assert not os.path.exists(home)
