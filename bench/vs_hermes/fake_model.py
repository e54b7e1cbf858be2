"""A fake OpenAI-compatible model for the side-by-side benchmark: standard library only, its own process.

Both programs talk to the same server. It streams Chat Completions as real servers do (HTTP/1.1
keep-alive, chunked SSE, ``TCP_NODELAY`` on every accepted socket), waits ``--latency`` seconds before
each reply's first byte, and plays what a marker in the last user message asks for:

    [[bench tools=N]]              a ``terminal`` call running ``true`` until N tool results follow the
                                   user message, then a short answer
    [[bench sleep=S]]              one ``terminal`` call running ``sleep S`` (the interrupt workload)
    [[bench code=K kind=KIND path=P start=S]]
                                   one ``execute_code`` call whose script makes K tool calls of KIND
                                   (``code_calls.CALLS``: refused, fail, read, write, search; P is the
                                   path it works on, S the calls of that kind the session made before)
                                   and prints its first line's wall-clock time and the mean time per call
    [[bench slow=N gap=MS]]        an answer of N chunks, MS milliseconds apart
    (no marker)                    a one-word answer

``GET /stats`` returns the requests served, the requests it could not answer, and what each
``execute_code`` script reported: the time from the end of the reply that asked for the script to
the script's first line, and the microseconds per call. ``POST /reset`` clears them.

Run: python fake_model.py [--port 0] [--latency 0.05]   (prints ``http://127.0.0.1:PORT/v1``)
"""

from __future__ import annotations

import argparse
import json
import re
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from code_calls import script

MARKER = re.compile(r"\[\[bench ([^\]]*)\]\]")


class Stats:
    """What the server did, shared by its threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests = 0
        self.errors = 0
        self.code_results: list[dict[str, float]] = []
        # When the reply asking for an execute_code script ended, by tool call id.
        self.code_asked: dict[str, float] = {}

    def as_dict(self) -> dict[str, Any]:
        """The JSON of ``/stats``."""
        with self.lock:
            return {"requests": self.requests, "errors": self.errors, "code_results": list(self.code_results)}

    def reset(self) -> None:
        """Forget everything."""
        with self.lock:
            self.requests = self.errors = 0
            self.code_results.clear()
            self.code_asked.clear()


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def _marker(messages: list[dict[str, Any]]) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """The last user message's marker settings, and the messages after it."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") == "user":
            found = MARKER.search(_text(messages[index].get("content")))
            settings = dict(item.split("=", 1) for item in found.group(1).split()) if found else {}
            return settings, messages[index + 1:]
    return {}, []


class Reply:
    """One reply: text pieces with a gap between them, or one tool call."""

    def __init__(self, pieces: list[str], gap: float = 0.0, tool: tuple[str, dict[str, Any]] | None = None) -> None:
        self.pieces = pieces
        self.gap = gap
        self.tool = tool
        self.call_id = f"call_{time.monotonic_ns()}_{threading.get_ident()}"


def plan(body: dict[str, Any], stats: Stats) -> Reply:
    """What to answer to one request."""
    settings, after = _marker(body.get("messages") or [])
    results = [m for m in after if m.get("role") == "tool"]
    if "tools" in settings:
        if len(results) < int(settings["tools"]):
            return Reply(["Checking."], tool=("terminal", {"command": "true"}))
        return Reply(["All ", "checks ", "passed."])
    if "sleep" in settings:
        if not results:
            return Reply([], tool=("terminal", {"command": f"sleep {settings['sleep']}"}))
        return Reply(["Done."])
    if "code" in settings:
        if not results:
            code = script(settings.get("kind", "refused"), settings.get("path", ""), int(settings["code"]),
                          int(settings.get("start", "0")))
            return Reply([], tool=("execute_code", {"code": code}))
        _record_code_result(results[-1], stats)
        return Reply(["Measured."])
    if "slow" in settings:
        count, gap = int(settings["slow"]), float(settings.get("gap", "20")) / 1000
        return Reply([f"w{n} " for n in range(count)], gap=gap)
    return Reply(["ok"])


def _record_code_result(result: dict[str, Any], stats: Stats) -> None:
    text = _text(result.get("content"))
    first = re.search(r"FIRST ([0-9.]+)", text)
    per_call = re.search(r"PERCALL_US ([0-9.]+)", text)
    last = re.search(r"LAST (.*)", text)
    with stats.lock:
        asked = stats.code_asked.pop(str(result.get("tool_call_id")), None)
        if first is None or per_call is None or asked is None:
            stats.errors += 1
            return
        stats.code_results.append({"first_line_ms": (float(first.group(1)) - asked) * 1000,
                                   "per_call_us": float(per_call.group(1)), "last": last.group(1) if last else ""})


def _chunk(model: str, delta: dict[str, Any], finish: str | None = None, usage: dict[str, int] | None = None) -> bytes:
    payload: dict[str, Any] = {
        "id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": int(time.time()), "model": model,
        "choices": [] if usage is not None else [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if usage is not None:
        payload["usage"] = usage
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


class Handler(BaseHTTPRequestHandler):
    """One connection; HTTP/1.1, so it is kept alive between requests."""

    protocol_version = "HTTP/1.1"
    server: BenchServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        """Quiet: a log line per request would cost more than the reply."""

    def setup(self) -> None:
        """Send small writes at once, as production servers do."""
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_GET(self) -> None:  # noqa: N802 - the base class's name
        """``/stats`` and the model list."""
        if self.path.endswith("/stats"):
            self._json(200, self.server.stats.as_dict())
        elif self.path.endswith("/models"):
            self._json(200, {"object": "list", "data": [{"id": "bench-model", "object": "model", "context_length": 128000}]})
        else:
            self._json(404, {"error": {"message": f"no route for {self.path}"}})

    def do_POST(self) -> None:  # noqa: N802 - the base class's name
        """Completions, and ``/reset``."""
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        if self.path.endswith("/reset"):
            self.server.stats.reset()
            self._json(200, {"ok": True})
            return
        stats = self.server.stats
        with stats.lock:
            stats.requests += 1
        try:
            request = json.loads(body)
            reply = plan(request, stats)
        except (ValueError, KeyError, TypeError) as exc:
            with stats.lock:
                stats.errors += 1
            self._json(400, {"error": {"message": f"bench server: {exc!r}"}})
            return
        time.sleep(self.server.latency)
        if request.get("stream"):
            self._stream(request, reply)
        else:
            self._complete(request, reply)
        if reply.tool is not None and reply.tool[0] == "execute_code":
            with stats.lock:
                stats.code_asked[reply.call_id] = time.time()

    def _stream(self, request: dict[str, Any], reply: Reply) -> None:
        model = str(request.get("model", "bench-model"))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        self._piece(_chunk(model, {"role": "assistant", "content": ""}))
        for n, piece in enumerate(reply.pieces):
            if n and reply.gap:
                time.sleep(reply.gap)
            self._piece(_chunk(model, {"content": piece}))
        finish = "stop"
        if reply.tool is not None:
            name, arguments = reply.tool
            call = {"index": 0, "id": reply.call_id, "type": "function",
                    "function": {"name": name, "arguments": json.dumps(arguments)}}
            self._piece(_chunk(model, {"tool_calls": [call]}))
            finish = "tool_calls"
        self._piece(_chunk(model, {}, finish))
        if (request.get("stream_options") or {}).get("include_usage"):
            self._piece(_chunk(model, {}, usage={"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}))
        self._piece(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _piece(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _complete(self, request: dict[str, Any], reply: Reply) -> None:
        message: dict[str, Any] = {"role": "assistant", "content": "".join(reply.pieces) or None}
        if reply.tool is not None:
            name, arguments = reply.tool
            message["tool_calls"] = [{"id": reply.call_id, "type": "function",
                                      "function": {"name": name, "arguments": json.dumps(arguments)}}]
        self._json(200, {
            "id": "chatcmpl-bench", "object": "chat.completion", "created": int(time.time()),
            "model": request.get("model", "bench-model"),
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if reply.tool else "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
        })

    def _json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()


class BenchServer(ThreadingHTTPServer):
    """The threaded server with its latency and statistics."""

    daemon_threads = True
    request_queue_size = 1024

    def __init__(self, port: int, latency: float) -> None:
        super().__init__(("127.0.0.1", port), Handler)
        self.latency = latency
        self.stats = Stats()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that closes its connection (between requests, or stopped mid-stream) is no error."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def main() -> None:
    """Serve until killed; the first line printed is the base URL."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.05)
    args = parser.parse_args()
    server = BenchServer(args.port, args.latency)
    print(f"http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
