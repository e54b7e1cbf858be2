"""The web dashboard through a real browser: Debian's Chromium, driven by Playwright's sync API from a
worker thread, against a real daemon (in this process's Trio loop) whose model is the scripted provider.
The tests wait with selectors, not ``wait_for_function``: the page's Content-Security-Policy forbids
the ``eval`` that one needs.

Each browser script runs whole in one thread (Playwright's sync API keeps to the thread that started
it) while the daemon serves on the Trio loop; everything time-based waits for what the page shows,
never for a clock: a turn is held open by a stalled stream or by its approval.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import httpx2
import pytest
import trio

from control.client import ControlClient
from control.paths import DaemonPaths
from messages import control as c
from providers.scripted import ScriptedProvider
from tests.api.harness import ISOLATED_TOOLS, KEY, ApiDaemon, api_daemon
from tests.dashboard.conftest import CHROMIUM_ARGS

T = TypeVar("T")

#: A reply that would run script if the page ever put it into HTML.
HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
#: What the page must contain once it has drawn the tree.
TREE_DRAWN = '.node[data-path="sessions"]'
TURN_NODE = '.node[data-path$="/turn"]'


def _run_browser(chromium: Path, script: Callable[[Any], T]) -> T:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=str(chromium), headless=True, args=list(CHROMIUM_ARGS))
        try:
            page = browser.new_context().new_page()
            page.set_default_timeout(15_000)
            return script(page)
        finally:
            browser.close()


async def browse(chromium: Path, script: Callable[[Any], T]) -> T:
    """Run ``script(page)`` in a fresh headless Chromium, in a worker thread (the daemon goes on serving)."""
    return await trio.to_thread.run_sync(_run_browser, chromium, script)


def log_in(page: Any, url: str) -> None:
    """Open the dashboard, log in with the key, and wait for the tree."""
    page.goto(f"{url}/dashboard")
    page.fill("#key", KEY)
    page.click("#login")
    page.wait_for_selector(TREE_DRAWN)


def chat(page: Any, text: str) -> None:
    """Send ``text`` from the chat box (a new session when none is open) and wait for its transcript to open."""
    page.fill("#chat-text", text)
    page.click("#send")
    page.wait_for_selector("#session-title >> text=/^Session /")


def push_call(daemon: ApiDaemon, tool: str, arguments: dict[str, Any], reply: str) -> None:
    """Script the model: one call of ``tool``, then ``reply``."""
    daemon.provider.push({"tool_calls": [{"id": "call_1", "name": tool, "arguments": arguments}]}, {"text": reply})


def answer_card(page: Any, kind: str, answer: str, reply: str) -> None:
    """Click ``answer`` on the pending ``kind`` card; wait for the card to go and the turn's ``reply``."""
    page.click(f'.card.{kind} button[data-answer="{answer}"]')
    page.wait_for_selector(f".card.{kind}", state="detached")
    page.wait_for_selector(f"#transcript .msg.assistant .text:text-is('{reply}')")


def _add_cron_job(home: Path) -> None:
    with ControlClient.connect(DaemonPaths(home)) as client:
        client.request(c.CronRequest(client.next_id(), "add", name="nightly", schedule="every 2h", prompt="tidy up"))


def assistant_text(page: Any) -> str:
    return str(page.eval_on_selector_all("#transcript .msg.assistant .text", "els => els.map(e => e.textContent).join('|')"))


class TestLogin:
    """The page needs the API key: a wrong one is refused, the right one gives a cookie the page cannot read
    and a page showing the tree, the platforms and the cron jobs."""

    async def test_wrong_key_refused_right_key_admitted(
        self, dashboard: ApiDaemon, chromium: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A wrong key gets a 401 and no cookie; the right one an HttpOnly SameSite=Strict cookie and the tree."""
        caplog.set_level(logging.DEBUG)
        url = dashboard.url

        def script(page: Any) -> dict[str, Any]:
            first = page.goto(f"{url}/dashboard")
            assert page.url == f"{url}/dashboard/login"
            page.fill("#key", "wrong-key-0123456789abcdefgh")
            with page.expect_response(lambda r: r.request.method == "POST") as answer:
                page.click("#login")
            refused_status = answer.value.status
            error_shown = page.is_visible("#login-error")
            cookies_after_refusal = page.context.cookies()
            api_refused = page.request.get(f"{url}/dashboard/api/state").status
            page.fill("#key", KEY)
            page.click("#login")
            page.wait_for_selector(TREE_DRAWN)
            page.wait_for_selector("#cron >> text=nightly")
            return {
                "platforms": page.eval_on_selector("#platforms", "e => e.textContent"),
                "cron": page.eval_on_selector("#cron", "e => e.textContent"),
                "csp": first.headers.get("content-security-policy", ""), "refused": refused_status,
                "error_shown": error_shown, "cookies_after_refusal": cookies_after_refusal, "api_refused": api_refused,
                "cookies": page.context.cookies(), "url": page.url,
                "script_sees_cookie": page.evaluate("document.cookie"),
            }

        await trio.to_thread.run_sync(_add_cron_job, dashboard.home)
        seen = await browse(chromium, script)
        assert "serving" in seen["platforms"] and url in seen["platforms"]
        assert "every 2h" in seen["cron"] and "active" in seen["cron"]
        assert seen["refused"] == 401 and seen["error_shown"]
        assert seen["cookies_after_refusal"] == [] and seen["api_refused"] == 401
        [cookie] = seen["cookies"]
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/dashboard"
        assert KEY not in cookie["value"] and KEY not in seen["url"]
        assert seen["script_sees_cookie"] == ""
        assert "script-src 'self'" in seen["csp"] and "default-src 'none'" in seen["csp"]
        assert "refused a login with a wrong key" in caplog.text
        assert KEY not in caplog.text


class TestLiveTurn:
    """A turn started from the chat box shows in the tree and the transcript as it runs, takes a steer, and stops on Interrupt."""

    async def test_tree_and_transcript_follow_the_turn(self, dashboard: ApiDaemon, chromium: Path) -> None:
        """The turn's node appears, its text streams in, a steer is taken, Interrupt ends it and the node goes away."""
        # The first words arrive, then the stream stalls: the turn is running until it is interrupted.
        dashboard.provider.push({"text": "alpha beta gamma delta epsilon", "stall_after_chunks": 3})
        url = dashboard.url

        def script(page: Any) -> dict[str, Any]:
            log_in(page, url)
            had_turn = page.query_selector(TURN_NODE) is not None
            chat(page, "stream something")
            turn = page.wait_for_selector(TURN_NODE)
            page.wait_for_selector("#transcript .msg.assistant .text:has-text('beta')")
            partial = assistant_text(page)
            turn_state = turn.get_attribute("data-state")
            page.wait_for_selector("#interrupt:not([disabled])")
            page.fill("#steer-text", "keep it short")
            page.click("#steer")
            page.wait_for_selector("#notice >> text=/^steered/")
            page.click("#interrupt")
            page.wait_for_selector(TURN_NODE, state="detached")
            page.wait_for_selector("#transcript .msg.status >> text=interrupted")
            return {"had_turn": had_turn, "partial": partial, "turn_state": turn_state}

        seen = await browse(chromium, script)
        assert not seen["had_turn"]
        assert "alpha beta" in seen["partial"] and "epsilon" not in seen["partial"]
        assert seen["turn_state"] in ("running", "busy")


class TestApproval:
    """A dangerous command waits for an approval; answering it on the page lets the turn go on."""

    async def test_approve_once_from_the_page(self, dashboard: ApiDaemon, chromium: Path) -> None:
        """The approval card shows the command; clicking 'once' runs it and the turn finishes."""
        victim = dashboard.workdir / "victim"
        victim.mkdir()
        push_call(dashboard, "terminal", {"command": f"rm -r {victim}"}, "Removed.")
        url = dashboard.url

        def script(page: Any) -> dict[str, Any]:
            log_in(page, url)
            chat(page, "remove it")
            card = page.wait_for_selector(".card.approval")
            command = card.query_selector(".command").text_content()
            waiting_badge = page.wait_for_selector("#attention button").text_content()
            exists_before = victim.exists()
            answer_card(page, "approval", "once", "Removed.")
            page.fill("#session-search", "remove")
            hit = page.wait_for_selector("#sessions li .hit").text_content()
            return {"command": command, "exists_before": exists_before, "waiting": waiting_badge, "hit": hit}

        seen = await browse(chromium, script)
        assert seen["command"] == f"rm -r {victim}"
        assert seen["exists_before"] and "waiting for an answer" in seen["waiting"]
        assert seen["hit"].startswith("user: ") and "remove" in seen["hit"]  # the search finds the session
        assert not victim.exists()


class TestClarify:
    """The agent's question shows on the page with its choices; the answer clicked is the tool's result."""

    async def test_answer_a_question_from_the_page(self, dashboard: ApiDaemon, chromium: Path) -> None:
        """Clicking a choice answers the clarify call and the turn goes on to its reply."""
        push_call(dashboard, "clarify", {"question": "Which colour?", "choices": ["red", "blue"]}, "Blue it is.")
        url = dashboard.url

        def script(page: Any) -> dict[str, Any]:
            log_in(page, url)
            chat(page, "paint it")
            card = page.wait_for_selector(".card.clarify")
            question = card.query_selector(".question").text_content()
            answer_card(page, "clarify", "blue", "Blue it is.")
            return {"question": question, "results": page.eval_on_selector_all(
                "#transcript .msg.tool .text", "els => els.map(e => e.textContent)"
            )}

        seen = await browse(chromium, script)
        assert seen["question"] == "Which colour?"
        assert any('"user_response": "blue"' in text or '"user_response":"blue"' in text for text in seen["results"]), seen


class TestHostileText:
    """Markup in a transcript is shown as text, never run: live, and read back from the store."""

    async def test_script_in_a_reply_is_inert(self, dashboard: ApiDaemon, chromium: Path) -> None:
        """A reply (and a message) holding <script> and an onerror image renders as text and runs nothing."""
        dashboard.provider.push({"text": HOSTILE})
        url = dashboard.url
        inert = (
            "({pwned: window.__pwned === undefined ? null : window.__pwned,"
            " elements: document.querySelectorAll('#transcript script, #transcript img').length,"
            " text: document.getElementById('transcript').textContent})"
        )

        def script(page: Any) -> dict[str, Any]:
            log_in(page, url)
            chat(page, HOSTILE)
            page.wait_for_selector("#transcript .msg.assistant .text:has-text('onerror')")
            live = page.evaluate(inert)
            session_id = page.eval_on_selector("#session-title", "e => e.textContent.split(' ')[1]")
            page.goto(f"{url}/dashboard")
            page.click(f'#sessions li[data-session-id="{session_id}"]')
            page.wait_for_selector("#transcript .msg.assistant .text:has-text('onerror')")
            return {"live": live, "stored": page.evaluate(inert)}

        seen = await browse(chromium, script)
        for view in (seen["live"], seen["stored"]):
            assert view["pwned"] is None and view["elements"] == 0
            assert view["text"].count("<script>window.__pwned = 1</script>") == 2  # the user's message and the reply


class TestRequestChecks:
    """The dashboard's data and actions need the key, and a browser's POST its CSRF token from this origin."""

    async def test_bearer_cookie_and_csrf(self, dashboard: ApiDaemon) -> None:
        """Bearer works for scripts; a cookie POST without the CSRF header, or from another origin, is refused."""
        dashboard.provider.push({"text": "ok"})
        async with httpx2.AsyncClient(base_url=dashboard.url) as http:
            assert (await http.get("/dashboard/api/state")).status_code == 401
            wrong = await http.get("/dashboard/api/state", headers={"Authorization": "Bearer wrong-key-0123456789abcd"})
            assert wrong.status_code == 401
            keyed = await http.get("/dashboard/api/state", headers={"Authorization": f"Bearer {KEY}"})
            assert keyed.status_code == 200 and keyed.json()["tree"]["children"]
            login = await http.post("/dashboard/login", data={"key": KEY})
            assert login.status_code == 303 and "hermes_dashboard" in http.cookies
            csrf = (await http.get("/dashboard/api/state")).json()["csrf"]
            assert (await http.post("/dashboard/api/sessions")).status_code == 400
            foreign = {"x-hermes-csrf": csrf, "origin": "http://evil.example"}
            assert (await http.post("/dashboard/api/sessions", headers=foreign)).status_code == 400
            created = await http.post("/dashboard/api/sessions", headers={"x-hermes-csrf": csrf})
            assert created.status_code == 200, created.text
            session_id = created.json()["session_id"]
            sent = await http.post(
                f"/dashboard/api/sessions/{session_id}/messages", json={"text": "hello"}, headers={"x-hermes-csrf": csrf}
            )
            assert sent.status_code == 200 and sent.json()["said"].startswith("sent"), sent.text
            static = await http.get("/dashboard/static/dashboard.js")
            assert "default-src 'none'" in static.headers["content-security-policy"]
            assert (await http.get("/dashboard/static/..%2Fdesk.py")).status_code == 404

    async def test_without_a_key_posts_still_need_the_page(self, provider: ScriptedProvider) -> None:
        """With ``auth_disabled`` the page logs a browser in by itself, but a POST without its cookie and
        CSRF token (another site's form aimed at loopback) is refused."""
        settings = "    dashboard: true\n    auth_disabled: true\n" + ISOLATED_TOOLS
        async with api_daemon(provider, settings, env_key=None) as daemon:
            async with httpx2.AsyncClient(base_url=daemon.url) as stranger:
                assert (await stranger.post("/dashboard/api/sessions")).status_code == 401
            async with httpx2.AsyncClient(base_url=daemon.url) as browser:
                page = await browser.get("/dashboard")
                assert page.status_code == 200 and "hermes_dashboard" in browser.cookies
                csrf = (await browser.get("/dashboard/api/state")).json()["csrf"]
                assert (await browser.post("/dashboard/api/sessions")).status_code == 400
                assert (await browser.post("/dashboard/api/sessions", headers={"x-hermes-csrf": csrf})).status_code == 200

    async def test_off_unless_configured(self, api: ApiDaemon) -> None:
        """Without ``platforms.api_server.dashboard`` the API serves no dashboard (it would reach CLI sessions)."""
        async with api.http() as http:
            assert (await http.get("/dashboard")).status_code == 404
            assert (await http.get("/dashboard/api/state")).status_code == 404
