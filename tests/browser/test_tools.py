"""The browser tools against a real Chromium and pages served on loopback by the tests."""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from config.browser import BrowserConfig
from config.sandbox import SandboxConfig
from tests.browser.conftest import Site
from tests.jail.fixtures import Jails
from tools.browser import register_browser_tools
from tools.dispatch import dispatch
from tools.jail import SessionJail
from tools.registry import ToolRegistry
from tools.results import ToolReply
from tools.testing import LocalToolContext

FORM = """<html><head><title>Sign up</title></head><body>
<h1>Sign up</h1>
<form method="post" action="/submit">
  <label>Name <input name="name"></label>
  <label>Email <input name="email" value="old@example.org"></label>
  <button type="submit">Send</button>
</form></body></html>"""


@attrs.define
class Driver:
    """Calls the browser tools as the model would, through dispatch."""

    registry: ToolRegistry
    ctx: LocalToolContext

    async def call(self, name: str, **args: Any) -> dict[str, Any]:
        """The call's JSON result (a failure's too)."""
        reply = await self.reply(name, **args)
        result: dict[str, Any] = json.loads(reply.text)
        return result

    async def reply(self, name: str, **args: Any) -> ToolReply:
        """The call's whole reply."""
        return await dispatch(self.registry, name, args, self.ctx)

    def ref(self, snapshot: str, role: str, name: str) -> str:
        """The ref of the element ``role "name"`` in ``snapshot``."""
        for line in snapshot.splitlines():
            if f'- {role} "{name}"' in line and "[ref=" in line:
                return "@" + line.split("[ref=", 1)[1].split("]", 1)[0]
        raise AssertionError(f"no {role} {name!r} in:\n{snapshot}")


@asynccontextmanager
async def driving(tmp_path: Path, jail: SessionJail | None = None, sees_images: bool = False, **config: Any) -> AsyncIterator[Driver]:
    """A driver whose browser lives for the block; the browser must be gone (no process, no profile) after it."""
    browser_config = BrowserConfig(**{"command_timeout": 10.0, **config})
    registry = ToolRegistry()
    register_browser_tools(registry, browser_config)
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    async with trio.open_nursery() as nursery:
        ctx = LocalToolContext(
            home=tmp_path / "home", cwd=str(workspace), nursery=nursery, browser_config=browser_config,
            sees_images=sees_images, **({} if jail is None else {"jail": jail}),
        )  # fmt: skip
        driver = Driver(registry, ctx)
        try:
            yield driver
        finally:
            nursery.cancel_scope.cancel()
    browser = ctx._browser
    if browser is not None:
        assert browser.stopped
        pid = browser.pid
        assert pid is not None
        assert not Path(f"/proc/{pid}").exists(), "the browser's process was left running"
        profile = browser.profile_dir
        assert profile is not None and not Path(profile).exists(), "the profile was left behind"
        assert not processes_using(os.path.basename(profile)), "a browser process was left running"


def processes_using(profile: str) -> list[int]:
    """Processes whose command line names the browser profile ``profile`` (its directory's own name)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as file:
                cmdline = file.read()
        except OSError:
            continue
        if profile.encode() in cmdline and b"--user-data-dir" in cmdline:
            found.append(int(entry))
    return found


class TestForm:
    """A model opens a page, reads it by refs, fills a form and submits it."""

    async def test_fills_and_submits(self, tmp_path: Path, site: Site) -> None:
        site.page("/", FORM)
        site.page("/submit", "<html><head><title>Thanks</title></head><body><p>Thank you</p></body></html>")
        async with driving(tmp_path) as driver:
            opened = await driver.call("browser_navigate", url=site.url("/"))
            assert opened["success"] is True and opened["title"] == "Sign up"
            assert opened["element_count"] >= 3
            snapshot = opened["snapshot"]
            assert '- heading "Sign up"' in snapshot
            name, email = driver.ref(snapshot, "textbox", "Name"), driver.ref(snapshot, "textbox", "Email")
            typed = await driver.call("browser_type", ref=name, text="Ada Lovelace")
            assert typed == {"success": True, "typed": "Ada Lovelace", "element": name}
            await driver.call("browser_type", ref=email, text="ada@example.org")
            clicked = await driver.call("browser_click", ref=driver.ref(snapshot, "button", "Send"))
            assert clicked["success"] is True and clicked["clicked"].startswith("@e")
            after = await driver.call("browser_snapshot")
            assert "Thank you" in after["snapshot"]
        posted = dict(site.requests)["/submit"]
        assert posted == b"name=Ada+Lovelace&email=ada%40example.org"

    async def test_enter_submits_and_back_returns(self, tmp_path: Path, site: Site) -> None:
        site.page("/", FORM)
        site.page("/submit", "<html><body>done</body></html>")
        async with driving(tmp_path) as driver:
            snapshot = (await driver.call("browser_navigate", url=site.url("/")))["snapshot"]
            await driver.call("browser_type", ref=driver.ref(snapshot, "textbox", "Name"), text="x")
            assert (await driver.call("browser_press", key="Enter")) == {"success": True, "pressed": "Enter"}
            assert "done" in (await driver.call("browser_snapshot"))["snapshot"]
            back = await driver.call("browser_back")
            assert back == {"success": True, "url": site.url("/")}

    async def test_unknown_ref_says_what_to_do(self, tmp_path: Path, site: Site) -> None:
        site.page("/", FORM)
        async with driving(tmp_path) as driver:
            await driver.call("browser_navigate", url=site.url("/"))
            failed = await driver.call("browser_click", ref="@e99")
        assert failed["success"] is False and "browser_snapshot" in failed["error"]


class TestReading:
    """The console, script evaluation, images and scrolling answer in Hermes's shapes."""

    async def test_console_eval_images_scroll(self, tmp_path: Path, site: Site) -> None:
        site.page("/", """<html><head><title>T</title></head><body style="height:5000px">
            <img src="/pic.png" alt="a picture"><script>console.warn('careful', 42); undefinedThing();</script>
            </body></html>""")
        site.routes["/pic.png"] = lambda handler: handler.reply(b"\x89PNG\r\n\x1a\n", "image/png")
        async with driving(tmp_path) as driver:
            await driver.call("browser_navigate", url=site.url("/"))
            console = await driver.call("browser_console", clear=True)
            assert {"type": "warning", "text": "careful 42", "source": "console"} in console["console_messages"]
            assert console["total_errors"] == 1 and "undefinedThing" in console["js_errors"][0]["message"]
            assert (await driver.call("browser_console"))["total_messages"] == 0
            evaluated = await driver.call("browser_console", expression="({title: document.title, n: 1 + 1})")
            assert evaluated == {"success": True, "result": {"title": "T", "n": 2}, "result_type": "dict"}
            images = await driver.call("browser_get_images")
            assert images["count"] == 1 and images["images"][0]["alt"] == "a picture"
            assert (await driver.call("browser_scroll", direction="down")) == {"success": True, "scrolled": "down"}
            assert (await driver.call("browser_console", expression="window.scrollY"))["result"] == 500


class TestInterrupt:
    """A navigation in flight is cancelled, not waited out, and the browser leaves nothing behind."""

    async def test_slow_page_interrupted_mid_load(self, tmp_path: Path, site: Site) -> None:
        arrived = trio.Event()
        token = trio.lowlevel.current_trio_token()

        def slow(handler: Any) -> None:
            token.run_sync_soon(arrived.set)
            site.release.wait(30)
            handler.reply("<html><body>late</body></html>")

        site.routes["/slow"] = slow
        async with driving(tmp_path, command_timeout=30.0) as driver:
            await driver.call("browser_navigate", url="about:blank")
            with trio.CancelScope() as turn:

                async def interrupt() -> None:
                    await arrived.wait()
                    turn.cancel()

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(interrupt)
                    started = trio.current_time()
                    await driver.call("browser_navigate", url=site.url("/slow"))
            assert turn.cancelled_caught
            assert trio.current_time() - started < 5
            # The browser goes on serving the session: the page was stopped, not the browser.
            assert (await driver.call("browser_console", expression="1 + 1"))["result"] == 2

    async def test_page_that_never_finishes_times_out(self, tmp_path: Path, site: Site) -> None:
        def endless(handler: Any) -> None:
            handler.send_response(200)
            handler.send_header("Content-Type", "text/html")
            handler.end_headers()
            handler.wfile.write(b"<html><body><p>partial")
            handler.wfile.flush()
            site.release.wait(30)

        site.routes["/endless"] = endless
        async with driving(tmp_path, command_timeout=1.5) as driver:
            started = trio.current_time()
            failed = await driver.call("browser_navigate", url=site.url("/endless"))
            assert trio.current_time() - started < 6
        assert failed["success"] is False
        assert "did not finish within browser.command_timeout" in failed["error"]


class TestPages:
    """Popups become the page the tools act on; past browser.max_pages they are closed."""

    POPUP = """<html><body><a href="/popup" target="_blank">Open</a></body></html>"""

    async def test_popup_is_followed(self, tmp_path: Path, site: Site) -> None:
        site.page("/", self.POPUP)
        site.page("/popup", "<html><head><title>Popup</title></head><body><p>inside the popup</p></body></html>")
        async with driving(tmp_path) as driver:
            snapshot = (await driver.call("browser_navigate", url=site.url("/")))["snapshot"]
            clicked = await driver.call("browser_click", ref=driver.ref(snapshot, "link", "Open"))
            assert clicked["open_pages"] == 2
            popup = await driver.call("browser_snapshot")
            assert "inside the popup" in popup["snapshot"], popup

    async def test_pages_past_the_limit_are_closed(self, tmp_path: Path, site: Site) -> None:
        site.page("/", self.POPUP)
        site.page("/popup", "<html><body>popup</body></html>")
        async with driving(tmp_path, max_pages=1) as driver:
            snapshot = (await driver.call("browser_navigate", url=site.url("/")))["snapshot"]
            clicked = await driver.call("browser_click", ref=driver.ref(snapshot, "link", "Open"))
            assert clicked["closed_pages"] == 1 and "open_pages" not in clicked
            assert "popup" not in (await driver.call("browser_snapshot"))["snapshot"]


class TestDownloads:
    """A download lands in the session's workspace and the call that started it says where."""

    async def test_download_lands_in_workspace(self, tmp_path: Path, site: Site) -> None:
        site.page("/", '<html><body><a href="/report.csv">Report</a></body></html>')
        site.routes["/report.csv"] = lambda handler: handler.reply(
            "a,b\n1,2\n", "text/csv", {"Content-Disposition": 'attachment; filename="report.csv"'}
        )
        async with driving(tmp_path) as driver:
            snapshot = (await driver.call("browser_navigate", url=site.url("/")))["snapshot"]
            clicked = await driver.call("browser_click", ref=driver.ref(snapshot, "link", "Report"))
        saved = tmp_path / "workspace" / "report.csv"
        assert clicked["downloads"] == [{"path": str(saved.resolve()), "url": site.url("/report.csv"), "state": "completed"}]
        assert saved.read_text() == "a,b\n1,2\n"


class TestDeniedAddresses:
    """A page cannot reach what the session's rules deny, its scripts included."""

    async def test_host_outside_allowed_domains_is_blocked(self, tmp_path: Path, site: Site) -> None:
        site.page("/", f"""<html><body><script>
            fetch({site.url("/secret", host="localhost")!r}).catch(e => console.log('failed'));
            </script></body></html>""")
        async with driving(tmp_path, allowed_domains=("127.0.0.1",)) as driver:
            await driver.call("browser_navigate", url=site.url("/"))
            refused = await driver.call("browser_navigate", url=site.url("/", host="localhost"))
            console = await driver.call("browser_console")
        assert "/secret" not in site.paths() and site.paths().count("/") == 1
        assert refused["success"] is False and "browser.allowed_domains" in refused["error"]
        blocked = [m["text"] for m in console["console_messages"] if m["source"] == "network"]
        assert blocked and "localhost" in blocked[0]

    async def test_websocket_outside_allowed_domains_is_blocked(self, tmp_path: Path, site: Site) -> None:
        """A WebSocket is never paused for a check: the browser's resolver refuses its host instead."""
        opened = threading.Event()

        def allowed_socket(handler: Any) -> None:
            opened.set()
            handler.send_error(404)

        site.routes["/allowed-socket"] = allowed_socket
        denied, allowed = site.url("/denied-socket"), site.url("/allowed-socket", host="localhost")
        # The allowed socket opens only once the denied one has closed: when it arrives, the denied one
        # had its chance.
        site.page("/", f"""<html><body><script>
            const denied = new WebSocket({denied.replace("http", "ws", 1)!r});
            denied.onclose = () => new WebSocket({allowed.replace("http", "ws", 1)!r});
            </script></body></html>""")
        async with driving(tmp_path, allowed_domains=("localhost",)) as driver:
            await driver.call("browser_navigate", url=site.url("/", host="localhost"))
            assert await trio.to_thread.run_sync(opened.wait, 20.0)
        assert "/denied-socket" not in site.paths()

    async def test_cross_site_iframe_is_checked_too(self, tmp_path: Path, site: Site) -> None:
        """A cross-site iframe runs in a process of its own, out of its page's reach: its requests are checked."""
        # a.localhost and 127.0.0.1 are different sites (the frame gets its own process); b.localhost is denied.
        site.page("/", f'<html><body><iframe src="{site.url("/frame")}"></iframe></body></html>')
        site.page("/frame", f'<html><body><img src="{site.url("/secret.png", host="b.localhost")}"></body></html>')
        async with driving(tmp_path, allowed_domains=("127.0.0.1", "a.localhost")) as driver:
            # The page's load waits for its frames' images: by then the image was asked for, or refused.
            opened = await driver.call("browser_navigate", url=site.url("/", host="a.localhost"))
        assert opened["success"] is True
        assert "/frame" in site.paths() and "/secret.png" not in site.paths()

    async def test_metadata_endpoint_is_always_refused(self, tmp_path: Path) -> None:
        async with driving(tmp_path) as driver:
            refused = await driver.call("browser_navigate", url="http://169.254.169.254/latest/meta-data/")
        assert refused["success"] is False and "metadata" in refused["error"]

    async def test_jail_without_network_cannot_reach_the_host(self, tmp_path: Path, site: Site, jails: Jails) -> None:
        if not jails.jailed:
            pytest.skip("sandbox.network applies to jailed sessions")
        site.page("/", "<html><body>host</body></html>")
        workspace = tmp_path / "workspace"
        workspace.mkdir()
        jail = jails.jail(workspace, config=SandboxConfig(network=False))
        async with driving(tmp_path, jail=jail) as driver:
            failed = await driver.call("browser_navigate", url=site.url("/"))
        assert failed["success"] is False and "ERR_CONNECTION_REFUSED" in failed["error"]
        assert site.paths() == []


class TestJailed:
    """The browser runs in the session's jail, like every process a tool starts."""

    async def test_form_in_each_mode(self, tmp_path: Path, site: Site, jails: Jails) -> None:
        site.page("/", FORM)
        site.page("/submit", "<html><body>ok</body></html>")
        workspace = tmp_path / "workspace"
        workspace.mkdir()
        async with driving(tmp_path, jail=jails.jail(workspace)) as driver:
            snapshot = (await driver.call("browser_navigate", url=site.url("/")))["snapshot"]
            await driver.call("browser_type", ref=driver.ref(snapshot, "textbox", "Name"), text="jailed")
            await driver.call("browser_click", ref=driver.ref(snapshot, "button", "Send"))
            browser = driver.ctx._browser
            assert browser is not None and browser.pid is not None
            # The process the session started: bubblewrap, whose jail the browser runs in, when jailed.
            started = Path(f"/proc/{browser.pid}/comm").read_text().strip()
        assert dict(site.requests)["/submit"].startswith(b"name=jailed")
        assert started == "bwrap" or not jails.launcher.status.available


class TestVision:
    """A screenshot goes to a model that takes images; otherwise vision is said to be unavailable."""

    async def test_seeing_model_gets_the_screenshot(self, tmp_path: Path, site: Site) -> None:
        site.page("/", "<html><body><h1>Look</h1></body></html>")
        async with driving(tmp_path, sees_images=True) as driver:
            await driver.call("browser_navigate", url=site.url("/"))
            reply = await driver.reply("browser_vision", question="What is written?")
        result = json.loads(reply.text)
        assert result["success"] is True and result["screenshot_path"].endswith(".png")
        assert len(reply.images) == 1 and Path(reply.images[0]).read_bytes().startswith(b"\x89PNG")

    async def test_blind_model_is_told_vision_is_unavailable(self, tmp_path: Path, site: Site) -> None:
        site.page("/", "<html><body><h1>Look</h1></body></html>")
        async with driving(tmp_path) as driver:
            await driver.call("browser_navigate", url=site.url("/"))
            reply = await driver.reply("browser_vision", question="What is written?")
        result = json.loads(reply.text)
        assert result["success"] is False and "Vision is unavailable" in result["error"]
        assert reply.images == () and result["screenshot_path"].startswith("/")


class TestMissingBrowser:
    """With no browser the tools are left out of the model's list, with one log line naming the fix."""

    def test_tools_hidden_and_logged(self, caplog: pytest.LogCaptureFixture) -> None:
        registry = ToolRegistry()
        with caplog.at_level(logging.WARNING):
            register_browser_tools(registry, BrowserConfig(executable_path="/nonexistent/chromium"))
        assert not registry.is_available("browser_navigate")
        lines = [record.getMessage() for record in caplog.records if "browser tools left out" in record.getMessage()]
        assert len(lines) == 1 and "apt-get install chromium" in lines[0] and "brew install --cask chromium" in lines[0]
