"""A tiny ASGI app served by hypercorn's Trio worker on loopback: fake search APIs and pages."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import parse_qs

import trio
from hypercorn.config import Config
from hypercorn.trio import serve

Scope = dict[str, Any]
Send = Callable[[dict[str, Any]], Awaitable[None]]
Receive = Callable[[], Awaitable[dict[str, Any]]]

BRAVE_KEY = "brave-test-key-1234567890"

PAGE = """<!doctype html><html><head><title>Trio notes</title><style>body{color:red}</style>
<script>alert('tracking')</script></head><body>
<nav><a href="/">Home</a> | <a href="/about">About</a></nav>
<main><h1>Structured concurrency</h1><p>Nurseries <b>own</b> their tasks.</p>
<ul><li>cancel scopes</li><li>checkpoints</li></ul></main>
<footer>Copyright footer</footer></body></html>"""


async def _respond(send: Send, status: int, body: bytes, content_type: str, headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", content_type.encode()), *headers],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _json(send: Send, payload: object, status: int = 200) -> None:
    await _respond(send, status, json.dumps(payload).encode(), "application/json")


class FakeWeb:
    """The app; ``requests`` records (path, query, headers) of each HTTP request."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, list[str]], dict[str, str]]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        path = scope["path"]
        query = parse_qs(scope["query_string"].decode())
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        self.requests.append((path, query, headers))
        await self._route(path, query, headers, send)

    async def _route(self, path: str, query: dict[str, list[str]], headers: dict[str, str], send: Send) -> None:
        q = query.get("q", [""])[0]
        if path == "/search":
            if q == "boom":
                await _json(send, {"error": "engine down"}, status=500)
            elif q == "notjson":
                await _respond(send, 200, b"<html>nope</html>", "text/html")
            else:
                results = [{"title": f"{q} result {i}", "url": f"https://example.org/{i}", "content": f"about {q} {i}"} for i in range(8)]
                results.insert(1, {"title": "no url"})
                await _json(send, {"query": q, "results": results})
        elif path == "/brave":
            if headers.get("x-subscription-token") != BRAVE_KEY:
                await _json(send, {"error": "unauthorized"}, status=401)
                return
            count = int(query.get("count", ["20"])[0])
            results = [{"title": f"B{i}", "url": f"https://brave.example/{i}", "description": f"desc {i}"} for i in range(count)]
            await _json(send, {"web": {"results": results}})
        elif path == "/page.html":
            await _respond(send, 200, PAGE.encode(), "text/html; charset=utf-8")
        elif path == "/latin1.html":
            await _respond(send, 200, "<html><body><p>café crème</p></body></html>".encode("latin-1"), "text/html; charset=iso-8859-1")
        elif path == "/plain.txt":
            await _respond(send, 200, b"just text\n", "text/plain")
        elif path == "/big.html":
            body = "<html><body><main>" + "<p>" + "word " * 50_000 + "</p></main></body></html>"
            await _respond(send, 200, body.encode(), "text/html")
        elif path == "/binary":
            await _respond(send, 200, bytes(range(256)), "application/octet-stream")
        elif path == "/redirect":
            await _respond(send, 302, b"", "text/plain", ((b"location", b"/page.html"),))
        elif path == "/loop":
            await _respond(send, 302, b"", "text/plain", ((b"location", b"/loop"),))
        elif path == "/to-file":
            await _respond(send, 302, b"", "text/plain", [(b"location", b"file:///etc/passwd")])
        elif path == "/slow":
            await trio.sleep(30)
            await _respond(send, 200, b"late", "text/plain")
        else:
            await _respond(send, 404, b"not here", "text/plain")


@asynccontextmanager
async def running_server(app: FakeWeb) -> AsyncIterator[str]:
    """Serve ``app`` on an ephemeral loopback port; yields its base URL."""
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    config.errorlog = None
    config.graceful_timeout = 0.1
    async with trio.open_nursery() as nursery:
        binds = await nursery.start(serve, app, config)
        yield binds[0]
        nursery.cancel_scope.cancel()
