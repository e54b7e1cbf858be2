"""The dashboard's browser: Debian's Chromium driven by Playwright's sync API, or a skip that says why.

In CI (``CI=true``) a missing browser or a missing Playwright fails the tests instead: the run must
not pass without having driven the page.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from providers.scripted import ScriptedProvider
# The daemon with its HTTP API (key KEY) but no dashboard, and the scripted provider: the API tests' fixtures.
from tests.api.conftest import api, provider  # noqa: F401
from tests.api.harness import ApiDaemon, api_daemon

#: Where Debian's ``chromium`` package puts the browser.
CHROMIUM = Path("/usr/bin/chromium")
#: Headless as root, and quiet: no first-run work, no background requests into a closed network.
CHROMIUM_ARGS = (
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
)
INSTALL = "apt-get install -y --no-install-recommends chromium (Debian/Ubuntu), and pip install -e '.[test]' for playwright"


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}; CI must drive a real browser: {INSTALL}")
    pytest.skip(f"{reason}; install it with: {INSTALL}")


@pytest.fixture
def chromium() -> Path:
    """The Chromium executable (the test skips, or fails in CI, without it or without Playwright)."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        _unavailable("the playwright package is not installed")
    if not os.access(CHROMIUM, os.X_OK):
        _unavailable(f"no Chromium at {CHROMIUM}")
    return CHROMIUM


@pytest.fixture
async def dashboard(provider: ScriptedProvider) -> AsyncIterator[ApiDaemon]:
    """A daemon serving the API (key ``KEY``) and the dashboard, on an ephemeral loopback port."""
    async with api_daemon(provider, "    dashboard: true\n") as running:
        yield running
