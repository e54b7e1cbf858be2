"""``status`` and ``inspect platform/api`` count the dashboard's open live streams beside the HTTP API's
other figures (a browser left open holds a stream; the operator can see how many)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.api.harness import ApiDaemon, wait_until
from tests.dashboard.test_dashboard import browse, chat, log_in

REPO = Path(__file__).resolve().parents[2]


def cli(home: Path, *args: str) -> str:
    """What ``hermes-actors ARGS`` prints for the daemon at ``home``."""
    result = subprocess.run(
        [sys.executable, "-m", "cli", *args], cwd=REPO, env={**os.environ, "HERMES_ACTORS_HOME": str(home)},
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


class TestStreamFigures:
    """A page with a session open holds two streams (the tree's and the session's); closing it frees both."""

    async def test_status_and_inspect_count_dashboard_streams(self, dashboard: ApiDaemon, chromium: Path) -> None:
        """With the page open, status says 2 dashboard streams open and inspect shows dashboard_streams 2;
        once the browser is gone, 0."""
        dashboard.provider.push({"text": "hello back"})
        url, home = dashboard.url, dashboard.home

        def script(page: Any) -> dict[str, str]:
            log_in(page, url)
            chat(page, "hello")
            page.wait_for_selector("#transcript .msg.assistant .text:text-is('hello back')")
            return {"status": cli(home, "status"), "inspect": cli(home, "inspect", "platform/api", "--json")}

        seen = await browse(chromium, script)
        assert "runs active, 2 dashboard streams open" in seen["status"], seen["status"]
        assert '"dashboard_streams": 2' in seen["inspect"], seen["inspect"]
        await wait_until(lambda: dashboard.api_actor().statistics().details["dashboard_streams"] == 0)
