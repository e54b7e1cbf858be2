"""Fixtures of the API tests: the scripted provider and a daemon serving the API."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from providers.scripted import ScriptedProvider, serve_scripted_provider
from tests.api.harness import ApiDaemon, api_daemon


@pytest.fixture
async def provider() -> AsyncIterator[ScriptedProvider]:
    """A scripted provider with an empty script (each test pushes its steps)."""
    async with serve_scripted_provider() as server:
        yield server


@pytest.fixture
async def api(provider: ScriptedProvider) -> AsyncIterator[ApiDaemon]:
    """A daemon with the API on an ephemeral loopback port, key ``KEY``."""
    async with api_daemon(provider) as running:
        yield running
