"""web_search and web_extract against a real loopback HTTP server (hypercorn, Trio worker)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import httpx2
import pytest
import trio

from config.terminal import WebConfig
from tests.tools.helpers import model_view
from tests.web.server import BRAVE_KEY, FakeWeb
from tools.builtin import register_core_tools
from tools.dispatch import dispatch
from tools.registry import ToolRegistry
from tools.testing import LocalToolContext
from tools.web import WebTools, html_to_markdown, register_web_tools


@pytest.fixture
def ctx(tmp_path: Path) -> LocalToolContext:
    context = LocalToolContext(home=tmp_path / "home", cwd=tmp_path)
    # The session's own temp directory, as the daemon gives each session: saved pages stay in the test's.
    (tmp_path / "session-tmp").mkdir()
    context.jail = attrs.evolve(context.jail, policy=attrs.evolve(context.jail.policy, tmp_dir=str(tmp_path / "session-tmp")))
    return context


async def run(handler: Any, ctx: LocalToolContext, **args: Any) -> dict[str, Any]:
    return await model_view(handler, args, ctx)


class TestSearch:
    """Both backends return the same shape; failures are errors the model can read."""

    async def test_searxng(self, fake: tuple[FakeWeb, str], client: httpx2.AsyncClient, ctx: LocalToolContext) -> None:
        app, base = fake
        tools = WebTools(WebConfig(searxng_url=base), client, environ={})
        result = await run(tools.web_search, ctx, query="trio", limit=3)
        assert result["success"] is True and result["backend"] == "searxng"
        assert [hit["title"] for hit in result["data"]["web"]] == ["trio result 0", "trio result 1", "trio result 2"]
        assert result["data"]["web"][0] == {
            "position": 1,
            "title": "trio result 0",
            "url": "https://example.org/0",
            "description": "about trio 0",
        }
        assert app.requests[-1][1] == {"q": ["trio"], "format": ["json"]}

    async def test_brave_with_key_from_env(self, fake: tuple[FakeWeb, str], client: httpx2.AsyncClient, ctx: LocalToolContext) -> None:
        app, base = fake
        config = WebConfig(brave_base_url=f"{base}/brave")
        tools = WebTools(config, client, environ={"BRAVE_SEARCH_API_KEY": BRAVE_KEY})
        result = await run(tools.web_search, ctx, query="x", limit=4)
        assert result["backend"] == "brave-free"
        assert [hit["url"] for hit in result["data"]["web"]] == [f"https://brave.example/{i}" for i in range(4)]
        assert app.requests[-1][2]["x-subscription-token"] == BRAVE_KEY

    async def test_bad_key_is_an_error_without_the_key(self, fake: tuple[FakeWeb, str], client: httpx2.AsyncClient, ctx: LocalToolContext) -> None:
        _, base = fake
        tools = WebTools(WebConfig(brave_base_url=f"{base}/brave"), client, environ={"BRAVE_SEARCH_API_KEY": "wrong-key-0000"})
        result = await run(tools.web_search, ctx, query="x")
        assert "HTTP 401" in result["error"] and result["backend"] == "brave-free"
        assert "wrong-key-0000" not in json.dumps(result)

    async def test_server_error_and_non_json(self, fake: tuple[FakeWeb, str], client: httpx2.AsyncClient, ctx: LocalToolContext) -> None:
        _, base = fake
        tools = WebTools(WebConfig(searxng_url=base), client, environ={})
        assert "HTTP 500" in (await run(tools.web_search, ctx, query="boom"))["error"]
        assert "not JSON" in (await run(tools.web_search, ctx, query="notjson"))["error"]

    async def test_unreachable_backend(self, client: httpx2.AsyncClient, ctx: LocalToolContext) -> None:
        tools = WebTools(WebConfig(searxng_url="http://127.0.0.1:9"), client, environ={})
        assert "could not be reached" in (await run(tools.web_search, ctx, query="x"))["error"]

    async def test_empty_query(self, client: httpx2.AsyncClient, ctx: LocalToolContext) -> None:
        tools = WebTools(WebConfig(searxng_url="http://127.0.0.1:9"), client, environ={})
        assert "non-empty" in (await run(tools.web_search, ctx, query="  "))["error"]


# The fake web is on loopback, which web_extract refuses by default.
LOCAL = WebConfig(allow_private_addresses=True)


class TestExtract:
    """Pages become markdown without furniture; each URL fails on its own."""

    async def test_html_page(self, fake: tuple[FakeWeb, str], client: httpx2.AsyncClient, ctx: LocalToolContext) -> None:
        _, base = fake
        tools = WebTools(LOCAL, client, environ={})
        result = await run(tools.web_extract, ctx, urls=[f"{base}/page.html"])
        [page] = result["results"]
        assert page["title"] == "Trio notes"
        assert page["content"].startswith("# Structured concurrency")
        assert "Nurseries **own** their tasks." in page["content"]
        assert "* cancel scopes" in page["content"]
        for noise in ("alert", "color:red", "Home", "Copyright"):
            assert noise not in page["content"]

    async def test_batch_with_per_url_errors(self, fake: tuple[FakeWeb, str], client: httpx2.AsyncClient, ctx: LocalToolContext) -> None:
        _, base = fake
        tools = WebTools(WebConfig(request_timeout_seconds=30, allow_private_addresses=True), client, environ={})
        urls = [
            f"{base}/plain.txt",
            f"{base}/missing",
            f"{base}/binary",
            "file:///etc/passwd",
            f"{base}/redirect",
            f"{base}/latin1.html",
            "http://127.0.0.1:9/closed",
        ]
        first, second = await run(tools.web_extract, ctx, urls=urls[:4]), await run(tools.web_extract, ctx, urls=urls[4:])
        pages = first["results"] + second["results"]
        result = {"succeeded": first["succeeded"] + second["succeeded"], "failed": first["failed"] + second["failed"]}
        assert [page["url"] for page in pages] == urls
        assert pages[0]["content"] == "just text"
        assert pages[1]["error"].startswith("HTTP 404")
        assert "Unsupported content type application/octet-stream" in pages[2]["error"]
        assert "http://" in pages[3]["error"]
        assert pages[4]["title"] == "Trio notes"
        assert pages[5]["content"] == "café crème"
        assert "Could not fetch" in pages[6]["error"]
        assert (result["succeeded"], result["failed"]) == (3, 4)

    async def test_a_page_slower_than_the_timeout_fails_alone(
        self, fake: tuple[FakeWeb, str], client: httpx2.AsyncClient, ctx: LocalToolContext
    ) -> None:
        """The timeout is per URL; the fast page beside a hung one still arrives (the hung one answers after 30 s)."""
        _, base = fake
        tools = WebTools(WebConfig(request_timeout_seconds=2, allow_private_addresses=True), client, environ={})
        result = await run(tools.web_extract, ctx, urls=[f"{base}/slow", f"{base}/plain.txt"])
        slow, plain = result["results"]
        assert "Timed out after 2s" in slow["error"]
        assert plain["content"] == "just text"

    async def test_a_long_page_is_a_head_and_tail_window_with_the_whole_saved(
        self, fake: tuple[FakeWeb, str], client: httpx2.AsyncClient, ctx: LocalToolContext
    ) -> None:
        """As in Hermes: 15,000 characters by default, head and tail, the full text in a file read_file can page."""
        _, base = fake
        tools = WebTools(LOCAL, client, environ={})
        [page] = (await run(tools.web_extract, ctx, urls=[f"{base}/big.html"]))["results"]
        assert page["truncated"] is True and page["full_chars"] > 200_000
        assert page["content"].startswith("word word") and page["content"].rstrip().endswith("word")
        assert 15_000 <= len(page["content"]) < 15_600
        saved = page["full_text_path"]
        assert f"saved at {saved}; read the missing part with read_file(path='{saved}', offset=1)" in page["content"]
        assert Path(saved).read_text(encoding="utf-8").startswith("word word")
        registry = ToolRegistry()
        register_core_tools(registry)
        read = json.loads((await dispatch(registry, "read_file", {"path": saved, "limit": 1}, ctx)).text)
        assert read["content"].startswith("1|word word"), "the session can read the saved page"

    async def test_char_limit_per_call(self, fake: tuple[FakeWeb, str], client: httpx2.AsyncClient, ctx: LocalToolContext) -> None:
        _, base = fake
        tools = WebTools(LOCAL, client, environ={})
        [page] = (await run(tools.web_extract, ctx, urls=[f"{base}/big.html"], char_limit=4_000))["results"]
        assert 4_000 <= len(page["content"]) < 4_600
        assert "at least 2,000" in (await run(tools.web_extract, ctx, urls=[f"{base}/big.html"], char_limit=10))["error"]
        [small] = (await run(tools.web_extract, ctx, urls=[f"{base}/plain.txt"]))["results"]
        assert "full_text_path" not in small and "truncated" not in small

    async def test_download_cap(self, fake: tuple[FakeWeb, str], client: httpx2.AsyncClient, ctx: LocalToolContext) -> None:
        _, base = fake
        tools = WebTools(WebConfig(max_download_bytes=5000, allow_private_addresses=True), client, environ={})
        [page] = (await run(tools.web_extract, ctx, urls=[f"{base}/big.html"]))["results"]
        assert page["truncated"] is True and len(page["content"]) < 5000

    async def test_too_many_and_bad_urls(self, client: httpx2.AsyncClient, ctx: LocalToolContext) -> None:
        tools = WebTools(WebConfig(), client, environ={})
        assert "At most 5 URLs" in (await run(tools.web_extract, ctx, urls=[f"http://h{i}" for i in range(6)]))["error"]
        assert "non-empty list" in (await run(tools.web_extract, ctx, urls=[]))["error"]

    async def test_redirect_loop_and_non_http_redirect(self, fake: tuple[FakeWeb, str], client: httpx2.AsyncClient, ctx: LocalToolContext) -> None:
        _, base = fake
        tools = WebTools(LOCAL, client, environ={})
        pages = (await run(tools.web_extract, ctx, urls=[f"{base}/loop", f"{base}/to-file"]))["results"]
        assert "Too many redirects" in pages[0]["error"]
        assert "not http(s)" in pages[1]["error"]

    async def test_cancelled_mid_download_leaves_client_usable(self, fake: tuple[FakeWeb, str], client: httpx2.AsyncClient, ctx: LocalToolContext) -> None:
        _, base = fake
        tools = WebTools(LOCAL, client, environ={})
        with trio.move_on_after(0.3) as scope:
            await tools.web_extract({"urls": [f"{base}/slow", f"{base}/slow"]}, ctx)
        assert scope.cancelled_caught
        [page] = (await run(tools.web_extract, ctx, urls=[f"{base}/plain.txt"]))["results"]
        assert page["content"] == "just text"

    def test_html_to_markdown_without_main(self) -> None:
        title, text = html_to_markdown("<html><body><h2>Hi</h2><p>a</p><p>b</p><script>x()</script></body></html>")
        assert (title, text) == ("", "## Hi\n\na\n\nb")


class TestPrivateAddresses:
    """By default web_extract refuses hosts on loopback, private and link-local networks."""

    async def test_refused_before_any_request(self, fake: tuple[FakeWeb, str], client: httpx2.AsyncClient, ctx: LocalToolContext) -> None:
        app, base = fake
        port = base.rsplit(":", 1)[1]
        tools = WebTools(WebConfig(), client, environ={})
        urls = [f"{base}/page.html", f"http://localhost:{port}/page.html", "http://169.254.169.254/latest/meta-data", "http://[::1]/", "http://10.1.2.3/"]
        pages = (await run(tools.web_extract, ctx, urls=urls))["results"]
        assert all("local or private network address" in page["error"] for page in pages)
        assert app.requests == []

    async def test_unresolvable_host(self, client: httpx2.AsyncClient, ctx: LocalToolContext) -> None:
        tools = WebTools(WebConfig(), client, environ={})
        [page] = (await run(tools.web_extract, ctx, urls=["http://no-such-host.invalid/"]))["results"]
        assert "Could not resolve" in page["error"]


class TestRegistration:
    """The tools are registered in toolset web and hidden without a backend."""

    async def test_hidden_without_backend_visible_with(self, client: httpx2.AsyncClient) -> None:
        environ: dict[str, str] = {}
        hidden = ToolRegistry()
        register_web_tools(hidden, WebConfig(), client, environ)
        assert hidden.get_definitions({"web_search", "web_extract"}) == []
        shown = ToolRegistry()
        register_web_tools(shown, WebConfig(), client, {"BRAVE_SEARCH_API_KEY": BRAVE_KEY})
        names = [d["function"]["name"] for d in shown.get_definitions({"web_search", "web_extract"})]
        assert names == ["web_extract", "web_search"]

    async def test_backend_none_disables(self, client: httpx2.AsyncClient) -> None:
        tools = WebTools(WebConfig(backend="none", searxng_url="http://x"), client, {"BRAVE_SEARCH_API_KEY": "k"})
        assert not tools.available()
