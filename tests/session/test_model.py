"""The session's model side: limits of the model in use, and compression sized and paused by them."""

from __future__ import annotations

from pathlib import Path

import attrs

from actors.session.compaction import SessionCompaction
from actors.session.hub import EventHub
from actors.session.model import SessionModel
from actors.session.state import FrozenTools, SessionState
from messages.chat import AssistantMessage, ChatMessage, HumanMessage, SystemMessage
from config.loader import Config
from config.providers import ModelConfig
from config.recovery import FallbackProviderConfig
from messages.events import StatusUpdate
from tests.session.harness import Harness, open_harness

PRIMARY_WINDOW = 1_000_000
# The built-in window of a deepseek model.
FALLBACK_WINDOW = 128_000
SHORT_HISTORY: list[ChatMessage] = [SystemMessage("sys"), HumanMessage("hi"), AssistantMessage("hello")]


def _config() -> Config:
    return Config(
        model=ModelConfig(context_length=PRIMARY_WINDOW),
        fallback_providers=(FallbackProviderConfig(provider="custom", model="deepseek-chat", base_url="http://127.0.0.1:9"),),
    )


def _parts(h: Harness) -> tuple[SessionModel, SessionCompaction, EventHub]:
    options = h.options()
    model = SessionModel(h.deps, options)
    state = SessionState(options, list(SHORT_HISTORY), FrozenTools(frozenset(), [], {}), h.shell())
    hub = EventHub("s1", "sessions/session:s1")
    return model, SessionCompaction(h.deps, "s1", model, state, hub), hub


async def _pause_by_thrashing(compaction: SessionCompaction) -> None:
    """Two automatic passes that free nothing (the history is all head and tail) pause compression."""
    preflight = compaction.preflight()
    assert preflight is not None
    for _ in range(2):
        assert await preflight(list(SHORT_HISTORY), 10 * PRIMARY_WINDOW) is None
    assert compaction.compressor().statistics().paused


class TestActiveModel:
    """After a fallback, what is sized by the model follows the model in use."""

    async def test_compressor_takes_the_fallback_window(self, tmp_path: Path) -> None:
        """The compressor's window is the primary's, then the fallback's once the chain moved on."""
        async with open_harness(tmp_path, _config()) as h:
            model, compaction, _ = _parts(h)
            assert compaction.compressor().statistics().context_length == PRIMARY_WINDOW
            model.chain.advance()
            assert model.current == "deepseek-chat"
            stats = compaction.compressor().statistics()
            assert stats.context_length == FALLBACK_WINDOW
            assert stats.threshold_tokens < PRIMARY_WINDOW // 2

    async def test_overflow_is_learned_for_the_model_in_use(self, tmp_path: Path) -> None:
        """A context-overflow error after a fallback resizes the fallback model, not the primary."""
        async with open_harness(tmp_path, _config()) as h:
            model, compaction, _ = _parts(h)
            model.chain.advance()
            await model.learn_overflow("This model's maximum context length is 8192 tokens. However, you asked for more.")
            assert compaction.compressor().statistics().context_length == 8192
            assert model.context_length_of("scripted-model") == PRIMARY_WINDOW


class TestThrashingPause:
    """Automatic compression paused by ineffective passes resumes on a manual compression or a new model."""

    async def test_manual_compression_resumes(self, tmp_path: Path) -> None:
        """/compress ends the pause, whatever it achieved."""
        async with open_harness(tmp_path, _config()) as h:
            _, compaction, hub = _parts(h)
            await _pause_by_thrashing(compaction)
            watcher = hub.subscribe("test")
            assert (await compaction.compress_now("the greeting")).startswith("nothing to compress")
            assert not compaction.compressor().statistics().paused
            assert isinstance(watcher.receive_nowait(), StatusUpdate)

    async def test_fallback_resumes(self, tmp_path: Path) -> None:
        """A fallback to another model ends the pause; staying on the same model keeps it."""
        async with open_harness(tmp_path, _config()) as h:
            model, compaction, _ = _parts(h)
            await _pause_by_thrashing(compaction)
            assert compaction.compressor().statistics().paused
            model.chain.advance()
            assert not compaction.compressor().statistics().paused

    async def test_same_model_stays_paused(self, tmp_path: Path) -> None:
        """Without a new model or a manual compression the pause holds: the preflight does not compress."""
        async with open_harness(tmp_path, attrs.evolve(_config(), fallback_providers=())) as h:
            _, compaction, hub = _parts(h)
            await _pause_by_thrashing(compaction)
            watcher = hub.subscribe("test")
            preflight = compaction.preflight()
            assert preflight is not None
            assert await preflight(list(SHORT_HISTORY), 10 * PRIMARY_WINDOW) is None
            assert watcher.receive_nowait() is None
