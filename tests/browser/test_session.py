"""The browser tools in a real session: the scripted provider calls them, the browser is a member of the
session's tree, a screenshot reaches a model that takes images, and the browser dies with the session."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import trio

from config.loader import Config
from messages.session import Interrupt, Shutdown, UserMessage
from tests.browser.conftest import Site
from tests.session.harness import collect_turn, open_harness, run_turn


class TestSessionBrowser:
    """A session's model opens a page and looks at it; the browser is session:<id>/browser."""

    async def test_navigate_and_vision_end_to_end(self, tmp_path: Path, site: Site) -> None:
        site.page("/", "<html><head><title>Hello page</title></head><body><h1>Hello</h1></body></html>")
        config = Config()
        config = attrs.evolve(config, model=attrs.evolve(config.model, vision="on"))
        async with open_harness(tmp_path, config) as h:
            handle, events, session_id = await h.start_session()
            h.provider.push(
                {"tool_calls": [{"id": "n1", "name": "browser_navigate", "arguments": {"url": site.url("/")}}]},
                {"tool_calls": [{"id": "v1", "name": "browser_vision", "arguments": {"question": "What is shown?"}}]},
                {"text": "It says Hello."},
            )
            finished, _ = await run_turn(handle, events, "open the page and look at it")
            assert finished.final_text == "It says Hello."
            browser_path = next(path for path in h.system.registry.paths() if path.endswith("/browser"))
            assert f"session:{session_id}/browser" in browser_path
            bodies = [json.dumps(request.body) for request in h.provider.requests]
            assert "Hello page" in bodies[1]
            # The screenshot follows the tool results as an image the model sees.
            assert "data:image/png;base64," in bodies[2]
            node = h.system.registry.tree(browser_path).snapshot
            assert node.kind == "browser" and node.details["pages"] == 1
            pid = node.details["pid"]
            assert Path(f"/proc/{pid}").exists()
            browser = h.system.registry.lookup(browser_path)
            await handle.ask(Shutdown("test over"))
            with trio.fail_after(10):
                await browser.wait_stopped()
            assert not Path(f"/proc/{pid}").exists()


    async def test_unused_browser_is_closed(self, tmp_path: Path, site: Site) -> None:
        """After browser.inactivity_timeout unused the browser closes; the next call starts another."""
        site.page("/", "<html><body>page</body></html>")
        config = Config()
        config = attrs.evolve(config, browser=attrs.evolve(config.browser, inactivity_timeout=0.5))
        async with open_harness(tmp_path, config) as h:
            handle, events, session_id = await h.start_session()
            navigate = {"tool_calls": [{"id": "n1", "name": "browser_navigate", "arguments": {"url": site.url("/")}}]}
            h.provider.push(navigate, {"text": "one"})
            await run_turn(handle, events, "open it")
            browser_path = next(path for path in h.system.registry.paths() if path.endswith("/browser"))
            pid = h.system.registry.tree(browser_path).snapshot.details["pid"]
            with trio.fail_after(10):
                await h.system.registry.lookup(browser_path).wait_stopped()
            assert not Path(f"/proc/{pid}").exists()
            h.provider.push({**navigate, "tool_calls": [{**navigate["tool_calls"][0], "id": "n2"}]}, {"text": "two"})
            finished, _ = await run_turn(handle, events, "open it again")
            assert finished.final_text == "two"
            assert h.system.registry.tree(browser_path).snapshot.details["pid"] != pid


class TestSessionInterrupt:
    """Interrupting the turn cancels a navigation in flight: the turn ends at once, the browser stays."""

    async def test_slow_page_interrupted(self, tmp_path: Path, site: Site) -> None:
        arrived = trio.Event()
        token = trio.lowlevel.current_trio_token()

        def slow(handler: Any) -> None:
            token.run_sync_soon(arrived.set)
            site.release.wait(60)

        site.routes["/slow"] = slow
        site.page("/fast", "<html><body>fast page</body></html>")
        async with open_harness(tmp_path) as h:
            handle, events, session_id = await h.start_session()
            h.provider.push(
                {"tool_calls": [{"id": "n1", "name": "browser_navigate", "arguments": {"url": site.url("/slow")}}]},
            )
            await handle.tell(UserMessage("open the slow page"))
            with trio.fail_after(10):
                await arrived.wait()
            interrupted_at = trio.current_time()
            await handle.tell(Interrupt())
            with trio.fail_after(5):
                finished, _ = await collect_turn(events)
            assert finished.reason == "interrupted"
            assert trio.current_time() - interrupted_at < 3
            # The browser is the session's: the next turn uses it again.
            h.provider.push(
                {"tool_calls": [{"id": "n2", "name": "browser_navigate", "arguments": {"url": site.url("/fast")}}]},
                {"text": "opened"},
            )
            finished, _ = await run_turn(handle, events, "open the fast page")
            assert finished.final_text == "opened"
            assert "fast page" in json.dumps(h.provider.requests[-1].body)


class TestScripts:
    """execute_code's scripts may drive the browser (the tools it lists for scripts)."""

    async def test_script_navigates_and_reads(self, tmp_path: Path, site: Site) -> None:
        site.page("/", "<html><head><title>Scripted</title></head><body><a href='/next'>Next</a></body></html>")
        site.page("/next", "<html><body>second page</body></html>")
        code = (
            "from hermes_tools import browser_navigate, browser_click, browser_snapshot\n"
            f"page = browser_navigate({site.url('/')!r})\n"
            "ref = page['snapshot'].split('[ref=')[1].split(']')[0]\n"
            "browser_click('@' + ref)\n"
            "print(page['title'], browser_snapshot()['snapshot'])\n"
        )
        async with open_harness(tmp_path) as h:
            handle, events, session_id = await h.start_session()
            h.provider.push(
                {"tool_calls": [{"id": "x1", "name": "execute_code", "arguments": {"code": code}}]},
                {"text": "done"},
            )
            await run_turn(handle, events, "script it")
            messages = (await h.deps.store.load(session_id)).messages
        result = json.loads(next(m for m in messages if m["role"] == "tool")["content"])
        assert result["status"] == "success", result
        assert "Scripted" in result["output"] and "second page" in result["output"]
        assert [path for path in site.paths() if path != "/favicon.ico"] == ["/", "/next"]
