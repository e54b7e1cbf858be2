"""How long a clarify question waits: Hermes's CLI and gateway timeouts, on Trio's autojump clock."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from actors.session.hub import EventHub
from actors.session.requests import PendingRequests, clarify_deadline
from config.loader import Config
from config.session import AgentConfig, ClarifyConfig
from messages.events import ClarifyRequested, RequestResolved


async def _expires_after(seconds: float) -> tuple[float, ClarifyRequested, RequestResolved]:
    """Ask a question nobody answers; returns (when it expired, the request, the resolution)."""
    hub = EventHub("s1", "/root/session:s1")
    watching = hub.subscribe("test")
    requests = PendingRequests(hub, 60.0, seconds)
    start = trio.current_time()
    assert await requests.ask_clarify("Which one?", ["a", "b"], True) is None
    elapsed = trio.current_time() - start
    asked, resolved = watching.receive_nowait(), watching.receive_nowait()
    assert isinstance(asked, ClarifyRequested) and isinstance(resolved, RequestResolved)
    return elapsed, asked, resolved


class TestHermesDefaults:
    """The CLI waits clarify.timeout (120 s); chat platforms wait agent.clarify_timeout (3600 s)."""

    def test_defaults_are_hermes_0_19(self) -> None:
        config = Config()
        assert (config.clarify.timeout, config.agent.clarify_timeout) == (120.0, 3600.0)

    @pytest.mark.parametrize(("source", "seconds"), [("cli", 120.0), ("telegram", 3600.0), ("discord", 3600.0), ("api", 3600.0)])
    def test_by_source(self, source: str, seconds: float) -> None:
        assert clarify_deadline(Config(), source) == seconds

    def test_each_key_governs_its_own_side(self) -> None:
        config = Config(agent=AgentConfig(clarify_timeout=900.0), clarify=ClarifyConfig(timeout=30.0))
        assert (clarify_deadline(config, "cli"), clarify_deadline(config, "discord")) == (30.0, 900.0)


class TestExpiry:
    """An unanswered question expires exactly at its source's deadline, and clients are told so."""

    @pytest.mark.parametrize(("source", "seconds"), [("cli", 120.0), ("discord", 3600.0)])
    async def test_expires_at_the_deadline(self, autojump_clock: trio.testing.MockClock, source: str, seconds: float) -> None:
        elapsed, asked, resolved = await _expires_after(clarify_deadline(Config(), source))
        assert elapsed == pytest.approx(seconds)
        assert asked.deadline_seconds == seconds
        assert (resolved.request_id, resolved.resolved_by) == (asked.request_id, "nobody in time")
