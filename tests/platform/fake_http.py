"""What the fake platform servers share: a threaded HTTP server quiet about clients that leave, and a
multipart form reader."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeHandler", "FakePlatform", "QuietServer", "parse_multipart", "serving"]


def parse_multipart(content_type: str, raw: bytes) -> dict[str, Any]:
    """A multipart form's fields (text) and files (``{"filename", "content"}``)."""
    message = BytesParser(policy=HTTP).parsebytes(f"content-type: {content_type}\r\n\r\n".encode() + raw)
    fields: dict[str, Any] = {}
    for part in message.iter_parts():
        name, filename = part.get_param("name", header="content-disposition"), part.get_filename()
        payload = part.get_payload(decode=True)
        fields[name] = {"filename": filename, "content": payload} if filename else payload.decode()
    return fields


class QuietServer(ThreadingHTTPServer):
    """Quiet about a client that went away mid-reply (a bot stopping during a long poll)."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class FakeHandler(BaseHTTPRequestHandler):
    """A fake's request handler: :meth:`reply` writes an answer; nothing is logged."""

    def reply(self, status: int, data: bytes, content_type: str = "application/json", headers: dict[str, str] | None = None) -> None:
        """Send ``status`` with ``data`` and ``headers``."""
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """Serve ``handler`` on 127.0.0.1 in a thread; its base URL. Stopped at the end."""
    server = QuietServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class FakePlatform:
    """A fake's state, shared by its server threads and the test: a condition to wait on, and what the
    bot sent (each fake appends dicts and notifies)."""

    def __init__(self) -> None:
        self.lock = threading.Condition()
        self.sent: list[dict[str, Any]] = []

    def wait_until(self, predicate: Any, what: str, timeout: float = 30.0) -> None:
        """Block until ``predicate()`` holds (checked whenever the fake is notified, and every 0.2 s)."""
        deadline = time.monotonic() + timeout
        with self.lock:
            while not predicate():
                remaining = deadline - time.monotonic()
                assert remaining > 0, f"timed out waiting for {what}; sent {self.sent}"
                self.lock.wait(min(remaining, 0.2))
