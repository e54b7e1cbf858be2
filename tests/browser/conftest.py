"""What the browser tests share: a real Chromium or a reason, pages served on loopback, a tool context.

In CI (``CI=true``) a missing browser fails these tests; elsewhere they are skipped with the reason and
the install command.
"""

from __future__ import annotations

import http.server
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

import attrs
import pytest

from config.browser import BrowserConfig
from tools.browser import INSTALL_HINT, find_browser
from tests.jail.fixtures import jails, launcher

__all__ = ["Site", "jails", "launcher", "require_browser", "site"]

Handler = Callable[["_Handler"], None]


def require_browser(config: BrowserConfig | None = None, *, playwright: bool = False) -> str:
    """The browser these tests (and the dashboard's, with ``playwright``, which drive it through Playwright)
    use; a failure in CI, a skip elsewhere, when there is none."""
    found = find_browser(config or BrowserConfig())
    reason = None if found is not None else f"no browser installed. {INSTALL_HINT}"
    if reason is None and playwright:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            reason = "the playwright package is not installed: pip install -e '.[test]'"
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must drive a real browser (.ci/run installs it): {reason}")
        pytest.skip(reason)
    assert found is not None
    return found


@pytest.fixture(autouse=True)
def _browser_installed() -> None:
    require_browser()


class _Handler(http.server.BaseHTTPRequestHandler):
    site: Site

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.site.serve(self)

    def do_POST(self) -> None:  # noqa: N802
        self.site.serve(self)

    def log_message(self, *args: Any) -> None:
        pass

    def reply(self, body: str | bytes, content_type: str = "text/html", headers: dict[str, str] | None = None) -> None:
        """Send ``body`` whole, with its length."""
        data = body.encode() if isinstance(body, str) else body
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


@attrs.define
class Site:
    """A web site on 127.0.0.1 made of routes; it records every request it gets (path and body)."""

    routes: dict[str, Handler] = attrs.Factory(dict)
    requests: list[tuple[str, bytes]] = attrs.Factory(list)
    port: int = 0
    #: Set by the tests to let a held request (a slow page) finish; set at teardown whatever happened.
    release: threading.Event = attrs.Factory(threading.Event)

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        """The address of ``path`` on this site."""
        return f"http://{host}:{self.port}{path}"

    def page(self, path: str, html: str) -> None:
        """Serve ``html`` at ``path``."""
        self.routes[path] = lambda handler: handler.reply(html)

    def serve(self, handler: _Handler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        self.requests.append((handler.path, body))
        route = self.routes.get(handler.path.split("?", 1)[0])
        if route is None:
            handler.send_error(404)
            return
        route(handler)

    def paths(self) -> list[str]:
        """The paths requested so far, in order."""
        return [path for path, _ in self.requests]


@pytest.fixture
def site() -> Iterator[Site]:
    """A site served on loopback by a thread for the test's length."""
    made = Site()
    handler = type("Handler", (_Handler,), {"site": made})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    made.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield made
    made.release.set()
    server.shutdown()
    server.server_close()
