"""A session's transcript in the dashboard is whole and shown once: a page opened mid-turn shows the words
already streamed, and a stream the network breaks is resumed by the browser where it stopped, repeating
nothing (through a loopback proxy the test cuts, as a network blip would)."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio

from tests.api.harness import ApiDaemon
from tests.dashboard.test_dashboard import browse, chat, log_in, push_call

#: Events the page's transcript shows, counted by kind.
COUNTS = (
    "({user: document.querySelectorAll('#transcript .msg.user').length,"
    " assistant: document.querySelectorAll('#transcript .msg.assistant').length,"
    " tools: document.querySelectorAll('#transcript .msg.tool').length,"
    " replies: [...document.querySelectorAll('#transcript .msg.assistant .text')].map(e => e.textContent)})"
)


class CuttingProxy:
    """A loopback TCP proxy to the daemon that can break every connection through it at once, and notes
    each request's head (its request line and headers) as it passes."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self.heads: list[str] = []
        self._scopes: set[trio.CancelScope] = set()
        self._seen = trio.Event()

    async def _pump(self, source: trio.SocketStream, sink: trio.SocketStream, note: bool) -> None:
        async for chunk in source:
            if note and chunk[:4] in (b"GET ", b"POST"):
                self.heads.append(chunk.split(b"\r\n\r\n", 1)[0].decode("latin-1"))
                self._seen.set()
            await sink.send_all(chunk)

    async def _serve(self, client: trio.SocketStream) -> None:
        with trio.CancelScope() as scope:
            self._scopes.add(scope)
            try:
                async with client, await trio.open_tcp_stream("127.0.0.1", self.target_port) as upstream:
                    async with trio.open_nursery() as nursery:
                        nursery.start_soon(self._pump, client, upstream, True)
                        await self._pump(upstream, client, False)
                        nursery.cancel_scope.cancel()
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                pass  # either side went away
            finally:
                self._scopes.discard(scope)

    async def cut(self) -> None:
        """Break every connection open now (the browser sees its streams end mid-way)."""
        for scope in tuple(self._scopes):
            scope.cancel()

    async def wait_for(self, marker: str, after: int) -> str:
        """The first request head past the first ``after`` that contains ``marker`` (waits for it)."""
        while True:
            for head in self.heads[after:]:
                if marker in head:
                    return head
            self._seen = trio.Event()
            await self._seen.wait()


@asynccontextmanager
async def cutting_proxy(daemon: ApiDaemon) -> AsyncIterator[CuttingProxy]:
    """A :class:`CuttingProxy` to ``daemon`` on an ephemeral loopback port."""
    proxy = CuttingProxy(int(daemon.url.rsplit(":", 1)[1]))
    async with trio.open_nursery() as nursery:
        [listener] = await nursery.start(functools.partial(trio.serve_tcp, proxy._serve, 0, host="127.0.0.1"))
        proxy.port = listener.socket.getsockname()[1]
        yield proxy
        nursery.cancel_scope.cancel()


class TestOpenedMidTurn:
    """A page that opens a session while its turn streams shows the words already streamed, then the rest."""

    async def test_second_page_shows_the_text_so_far(self, dashboard: ApiDaemon, chromium: Path) -> None:
        """One page starts a turn whose stream stalls after three words; another page opening the session then
        shows those words in the reply, not an empty bubble, and each page has one reply."""
        dashboard.provider.push({"text": "alpha beta gamma delta epsilon", "stall_after_chunks": 3})
        url = dashboard.url

        def script(page: Any) -> dict[str, Any]:
            log_in(page, url)
            chat(page, "stream something")
            page.wait_for_selector("#transcript .msg.assistant .text:has-text('beta')")
            session_id = page.eval_on_selector("#session-title", "e => e.textContent.split(' ')[1]")
            late = page.context.new_page()
            late.set_default_timeout(15_000)
            late.goto(f"{url}/dashboard")
            late.click(f'#sessions li[data-session-id="{session_id}"]')
            late.wait_for_selector("#interrupt:not([disabled])")  # the running turn's start has come
            late.wait_for_selector("#transcript .msg.assistant .text:has-text('beta')", timeout=5_000)
            seen = late.evaluate(COUNTS)
            late.click("#interrupt")
            late.wait_for_selector("#transcript .msg.status >> text=interrupted")
            return seen

        seen = await browse(chromium, script)
        assert seen["user"] == 1 and seen["assistant"] == 1
        assert seen["replies"][0].startswith("alpha beta")


class TestReconnect:
    """A session stream the network breaks is opened again by the browser with Last-Event-ID, and the
    transcript goes on where it was: no second user message, reply bubble or tool line."""

    async def test_reconnect_resumes_without_repeating(self, dashboard: ApiDaemon, chromium: Path) -> None:
        """While a turn waits for its approval every connection is cut; the page resumes after the last
        event it had, and approving then finishes the turn in the one reply bubble."""
        victim = dashboard.workdir / "victim"
        victim.mkdir()
        push_call(dashboard, "terminal", {"command": f"rm -r {victim}"}, "Removed.")

        async with cutting_proxy(dashboard) as proxy:
            url = f"http://127.0.0.1:{proxy.port}"

            def script(page: Any) -> dict[str, Any]:
                log_in(page, url)
                chat(page, "remove it")
                page.wait_for_selector(".card.approval")
                page.wait_for_selector("#transcript .msg.tool")
                before = page.evaluate(COUNTS)
                heads = len(proxy.heads)
                trio.from_thread.run(proxy.cut)
                resumed = trio.from_thread.run(proxy.wait_for, "/events", heads)
                page.click('.card.approval button[data-answer="once"]')
                page.wait_for_selector("#transcript .msg.assistant .text:text-is('Removed.')")
                page.wait_for_selector("#interrupt[disabled]")
                return {"before": before, "after": page.evaluate(COUNTS), "resumed": resumed}

            seen = await browse(chromium, script)
        assert "last-event-id:" in seen["resumed"].lower()
        assert seen["before"]["user"] == 1 and seen["before"]["assistant"] == 1
        after = seen["after"]
        assert after["user"] == 1 and after["assistant"] == 1, after
        assert after["replies"] == ["Removed."]
        assert after["tools"] == seen["before"]["tools"] + 1, after  # the tool's result, once; its start not again
        assert not victim.exists()
