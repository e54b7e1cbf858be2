"""A daemon loads its model's SDK ahead of the first call; a load that fails is logged and left to that call."""

from __future__ import annotations

import logging
import sys

import pytest

from providers._lazy_sdk import ANTHROPIC, OPENAI, openai_sdk, preload_sdk, sdk_for


class TestSdkFor:
    """Each wire protocol is spoken through its SDK."""

    @pytest.mark.parametrize(
        ("api_mode", "sdk"),
        [("chat_completions", OPENAI), ("codex_responses", OPENAI), ("anthropic_messages", ANTHROPIC)],
    )
    def test_mode(self, api_mode: str, sdk: str) -> None:
        assert sdk_for(api_mode) == sdk


class TestPreloadFailure:
    """An SDK that cannot be imported does not fail the warm-up: it says so, and the call itself raises."""

    async def test_logged_then_raised_by_the_call(self, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
        # None in sys.modules makes the import itself fail, as a broken installation would.
        monkeypatch.setitem(sys.modules, OPENAI, None)
        with caplog.at_level(logging.WARNING, logger="hermes_actors.providers"):
            await preload_sdk("chat_completions")
        assert any("openai SDK" in record.getMessage() for record in caplog.records), caplog.text
        with pytest.raises(ImportError):
            await openai_sdk()
