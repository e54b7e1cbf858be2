"""Fixtures of the recovery tests that go over the wire: the scripted provider and a client pool."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from config.providers import StreamingConfig
from providers.clients import ClientPool
from providers.scripted import ScriptedProvider, serve_scripted_provider

# Short deadlines so a stalled or dropped stream fails fast.
STREAMING = StreamingConfig(stale_timeout_seconds=0.5, read_timeout_seconds=5.0, connect_timeout_seconds=2.0)


@pytest.fixture
async def server() -> AsyncIterator[ScriptedProvider]:
    """The scripted provider, serving on loopback for one test."""
    async with serve_scripted_provider() as provider:
        yield provider


@pytest.fixture
async def clients() -> AsyncIterator[ClientPool]:
    """A client pool with the short deadlines, closed after the test."""
    pool = ClientPool(STREAMING)
    try:
        yield pool
    finally:
        await pool.aclose()
