"""The browser tools in a real session: the scripted provider calls them, the browser is a member of the
session's tree, a screenshot reaches a model that takes images, and the browser dies with the session."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import trio

from config.loader import Config
from messages.session import Shutdown
from tests.browser.conftest import Site
from tests.session.harness import open_harness, run_turn


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
            await handle.ask(Shutdown("test over"))
            with trio.fail_after(10):
                while any(path.endswith("/browser") for path in h.system.registry.paths()):
                    await trio.sleep(0.05)
            assert not Path(f"/proc/{pid}").exists()
