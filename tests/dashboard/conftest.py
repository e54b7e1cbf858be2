"""The dashboard's browser: Chromium driven by Playwright's sync API, or a skip that says why (the browser
tests' check: in CI, ``CI=true``, a missing browser or Playwright fails instead)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from providers.scripted import ScriptedProvider
# The daemon with its HTTP API (key KEY) but no dashboard, and the scripted provider: the API tests' fixtures.
from tests.api.conftest import api, provider  # noqa: F401
from tests.api.harness import ApiDaemon, api_daemon
from tests.browser.conftest import require_browser

#: Headless as root, and quiet: no first-run work, no background requests into a closed network.
CHROMIUM_ARGS = (
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
)


@pytest.fixture
def chromium() -> Path:
    """The Chromium executable (the test skips, or fails in CI, without it or without Playwright)."""
    return Path(require_browser(playwright=True))


@pytest.fixture
async def dashboard(provider: ScriptedProvider) -> AsyncIterator[ApiDaemon]:
    """A daemon serving the API (key ``KEY``) and the dashboard, on an ephemeral loopback port."""
    async with api_daemon(provider, "    dashboard: true\n") as running:
        yield running
