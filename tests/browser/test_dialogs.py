"""A page's JavaScript dialogs: held for the model, answered by browser_dialog, the policy or the watchdog."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from config.browser import BrowserConfig
from tests.browser.conftest import Site
from tests.browser.test_tools import Driver, driving

# A button whose click asks; the answer lands in the title (a held page could not set it).
CONFIRM = """<html><head><title>start</title></head><body>
<button onclick="document.title = confirm('Delete the draft?') ? 'yes' : 'no'">Delete</button>
</body></html>"""
PROMPT_ON_LOAD = """<html><head><title>start</title></head><body><p>Hello</p>
<script>document.title = String(prompt('Your name?', 'nobody'))</script></body></html>"""
# Long enough that a held page shows: a call that waited for the dialog would run into it.
COMMAND_TIMEOUT = 20.0
# A call that sees the dialog returns at once; this bounds "at once" far below COMMAND_TIMEOUT.
PROMPTLY = 8.0


async def _click_delete(driver: Driver, url: str) -> dict[str, Any]:
    snapshot = (await driver.call("browser_navigate", url=url))["snapshot"]
    with trio.fail_after(PROMPTLY):
        return await driver.call("browser_click", ref=driver.ref(snapshot, "button", "Delete"))


async def _title(driver: Driver) -> object:
    return (await driver.call("browser_console", expression="document.title"))["result"]


class TestMustRespond:
    """Under Hermes's default policy a dialog is held for the model, shown in the results and answered by browser_dialog."""

    async def test_click_that_opens_a_confirm_returns_and_the_model_answers_it(self, tmp_path: Path, site: Site) -> None:
        site.page("/", CONFIRM)
        async with driving(tmp_path, command_timeout=COMMAND_TIMEOUT) as driver:
            clicked = await _click_delete(driver, site.url("/"))
            assert clicked["success"] is True
            [shown] = clicked["pending_dialogs"]
            assert shown["type"] == "confirm" and shown["message"] == "Delete the draft?"
            with trio.fail_after(PROMPTLY):
                snapshot = await driver.call("browser_snapshot")
            assert snapshot["success"] is True and snapshot["pending_dialogs"] == [shown]
            held = await driver.call("browser_console", expression="document.title")
            assert held["success"] is False and held["pending_dialogs"] == [shown]
            answered = await driver.call("browser_dialog", action="accept")
            assert answered["success"] is True and answered["action"] == "accept"
            assert answered["dialog"]["id"] == shown["id"]
            assert await _title(driver) == "yes"
            after = await driver.call("browser_snapshot")
            assert after["pending_dialogs"] == []
            assert [(d["id"], d["closed_by"]) for d in after["recent_dialogs"]] == [(shown["id"], "agent")]

    async def test_prompt_while_loading_gets_the_models_text(self, tmp_path: Path, site: Site) -> None:
        site.page("/", PROMPT_ON_LOAD)
        async with driving(tmp_path, command_timeout=COMMAND_TIMEOUT) as driver:
            with trio.fail_after(PROMPTLY):
                opened = await driver.call("browser_navigate", url=site.url("/"))
            assert opened["success"] is True and opened["url"] == site.url("/")
            [shown] = opened["pending_dialogs"]
            assert (shown["type"], shown["message"], shown["default_prompt"]) == ("prompt", "Your name?", "nobody")
            answered = await driver.call("browser_dialog", action="accept", prompt_text="Ada", dialog_id=shown["id"])
            assert answered["success"] is True
            assert await _title(driver) == "Ada"
            assert "Hello" in (await driver.call("browser_snapshot"))["snapshot"]

    async def test_dismissed_prompt_returns_null(self, tmp_path: Path, site: Site) -> None:
        site.page("/", PROMPT_ON_LOAD)
        async with driving(tmp_path, command_timeout=COMMAND_TIMEOUT) as driver:
            await driver.call("browser_navigate", url=site.url("/"))
            assert (await driver.call("browser_dialog", action="dismiss", prompt_text="ignored"))["success"] is True
            assert await _title(driver) == "null"

    async def test_an_action_on_a_held_page_fails_saying_so(self, tmp_path: Path, site: Site) -> None:
        site.page("/", CONFIRM)
        async with driving(tmp_path, command_timeout=COMMAND_TIMEOUT) as driver:
            await _click_delete(driver, site.url("/"))
            with trio.fail_after(PROMPTLY):
                again = await driver.call("browser_click", ref="@e1")
            assert again["success"] is False and "browser_dialog" in again["error"]
            assert [d["type"] for d in again["pending_dialogs"]] == ["confirm"]

    async def test_wrong_answers_are_refused(self, tmp_path: Path, site: Site) -> None:
        site.page("/", CONFIRM)
        async with driving(tmp_path, command_timeout=COMMAND_TIMEOUT) as driver:
            await driver.call("browser_navigate", url=site.url("/"))
            nothing = await driver.call("browser_dialog", action="accept")
            assert nothing["success"] is False and "No dialog is open" in nothing["error"]
            await _click_delete(driver, site.url("/"))
            unknown = await driver.call("browser_dialog", action="accept", dialog_id="d-99")
            assert unknown["success"] is False and "d-99" in unknown["error"]
            bad = await driver.call("browser_dialog", action="maybe")
            assert "accept" in bad["error"]
            # The dialog is still there for a right answer.
            assert (await driver.call("browser_dialog", action="dismiss"))["success"] is True
            assert await _title(driver) == "no"


class TestWatchdog:
    """A dialog left unanswered for browser.dialog_timeout_s is dismissed and the page goes on."""

    async def test_unanswered_dialog_is_dismissed(self, tmp_path: Path, site: Site) -> None:
        site.page("/", CONFIRM)
        async with driving(tmp_path, command_timeout=COMMAND_TIMEOUT, dialog_timeout_s=0.5) as driver:
            clicked = await _click_delete(driver, site.url("/"))
            assert len(clicked["pending_dialogs"]) == 1
            with trio.fail_after(PROMPTLY):
                while (snapshot := await driver.call("browser_snapshot"))["pending_dialogs"]:
                    await trio.sleep(0.05)  # the watchdog is the browser's own timer; this only looks again
            assert [d["closed_by"] for d in snapshot["recent_dialogs"]] == ["watchdog"]
            assert await _title(driver) == "no"


class TestAutoPolicies:
    """auto_dismiss and auto_accept answer a dialog at once; the model sees it only in recent_dialogs."""

    @pytest.mark.parametrize(("policy", "title"), [("auto_dismiss", "no"), ("auto_accept", "yes")])
    async def test_confirm_is_answered_by_the_policy(self, tmp_path: Path, site: Site, policy: str, title: str) -> None:
        site.page("/", CONFIRM)
        async with driving(tmp_path, command_timeout=COMMAND_TIMEOUT, dialog_policy=policy) as driver:
            clicked = await _click_delete(driver, site.url("/"))
            assert clicked == {"success": True, "clicked": clicked["clicked"]}
            assert await _title(driver) == title
            snapshot = await driver.call("browser_snapshot")
            assert snapshot["pending_dialogs"] == []
            assert [(d["type"], d["closed_by"]) for d in snapshot["recent_dialogs"]] == [("confirm", "auto_policy")]

    async def test_auto_accept_takes_the_prompts_default(self, tmp_path: Path, site: Site) -> None:
        site.page("/", PROMPT_ON_LOAD)
        async with driving(tmp_path, command_timeout=COMMAND_TIMEOUT, dialog_policy="auto_accept") as driver:
            with trio.fail_after(PROMPTLY):
                opened = await driver.call("browser_navigate", url=site.url("/"))
            assert opened["title"] == "nobody" and "pending_dialogs" not in opened


class TestConfig:
    """The dialog keys are Hermes's, with its defaults; a policy it does not know is refused."""

    def test_defaults_and_refusal(self) -> None:
        config = BrowserConfig()
        assert (config.dialog_policy, config.dialog_timeout_s) == ("must_respond", 300.0)
        with pytest.raises(ValueError, match="dialog_policy"):
            BrowserConfig(dialog_policy="ask")
        with pytest.raises(ValueError, match="dialog_timeout_s"):
            BrowserConfig(dialog_timeout_s=0)
