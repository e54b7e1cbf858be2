"""A daemon loads its model's SDK ahead of the first call; a load that fails is logged and left to that call."""

from __future__ import annotations

import importlib
import logging
import sys
from pathlib import Path

import pytest
import trio
import trio.testing

from providers import _lazy_sdk
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
        monkeypatch.delitem(_lazy_sdk._LOADED, OPENAI, raising=False)
        with caplog.at_level(logging.WARNING, logger="hermes_actors.providers"):
            await preload_sdk("chat_completions")
        assert any("openai SDK" in record.getMessage() for record in caplog.records), caplog.text
        with pytest.raises(ImportError):
            await openai_sdk()


class TestImportUnderWay:
    """A call for an SDK whose import another thread has under way waits for the whole module, never a half."""

    async def test_second_caller_waits(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        # A module whose import stops half way, until the test lets it finish.
        (tmp_path / "half_made_sdk.py").write_text(
            "import threading\n"
            "import half_made_gate as gate\n"
            "gate.entered.set()\n"
            "gate.finish.wait(30)\n"
            "READY = True\n"
        )
        (tmp_path / "half_made_gate.py").write_text("import threading\nentered = threading.Event()\nfinish = threading.Event()\n")
        monkeypatch.syspath_prepend(str(tmp_path))
        gate = importlib.import_module("half_made_gate")
        seen: list[bool] = []

        async def load() -> None:
            seen.append(getattr(await _lazy_sdk._sdk("half_made_sdk"), "READY", False))

        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(load)
                await trio.to_thread.run_sync(gate.entered.wait, 30)
                # The module is in sys.modules now, half made: a second caller must not take it so.
                assert "half_made_sdk" in sys.modules
                nursery.start_soon(load)
                await trio.testing.wait_all_tasks_blocked()
                gate.finish.set()
        finally:
            gate.finish.set()
            for name in ("half_made_sdk", "half_made_gate"):
                sys.modules.pop(name, None)
            _lazy_sdk._LOADED.pop("half_made_sdk", None)
        assert seen == [True, True]
