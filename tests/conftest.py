"""Shared fixtures for the whole suite."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from supervisor import ActorSystem, open_actor_system


@pytest.fixture
async def system() -> AsyncIterator[ActorSystem]:
    """A running actor system; after the test, nothing may be left registered."""
    async with open_actor_system() as running:
        yield running
    assert running.registry.paths() == [], f"actors left registered: {running.registry.paths()}"
