"""The ASGI application of the scripted provider: routing, recording, pacing.

The model's replies come from a FIFO of :class:`Step` shared by every
endpoint; the wire modules turn a step into each provider's exact bytes.
"""

from __future__ import annotations

import json
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any

import attrs
import trio

from ..errors import ScriptError
from . import rules, wire_anthropic, wire_chat, wire_responses
from .speech import transcribe_form
from .sse import Render, estimate_prompt_tokens
from .steps import ErrorSpec, Step, parse_steps

log = logging.getLogger("providers.scripted")

Scope = Mapping[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

EXHAUSTED = Step(error=ErrorSpec(status=500, body=None, headers={}))
_EXHAUSTED_MESSAGE = "scripted provider: script exhausted (push more steps or enable rule mode)"

_PROVIDER_PATHS = ("/v1/chat/completions", "/v1/messages", "/v1/responses")

DEFAULT_MODELS: Mapping[str, int] = MappingProxyType(
    {
        "scripted-model": 128_000,
        "gpt-4o": 128_000,
        "claude-sonnet-4-5": 200_000,
    }
)


@attrs.frozen
class RecordedRequest:
    """One request the server received, as sent (body decoded from JSON when it parses)."""

    index: int
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    # The client's port: requests on one kept-alive connection share it.
    client_port: int | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON form for the admin endpoint."""
        return attrs.asdict(self)


@attrs.frozen
class Disconnect:
    """A client closed its connection before the reply to request ``request_index`` ended."""

    request_index: int
    path: str
    at: float


@attrs.define
class ScriptState:
    """The mutable state of one server: script queue and records.

    Invariant: only the server's own tasks and its owner (same Trio run) touch it.
    """

    rule_mode: bool = False
    # Seconds before the first byte of every rule-mode reply (a model's latency, for load tests).
    rule_latency: float = 0.0
    default: Step = EXHAUSTED
    models: dict[str, int] = attrs.Factory(lambda: dict(DEFAULT_MODELS))
    steps: deque[Step] = attrs.Factory(deque)
    requests: list[RecordedRequest] = attrs.Factory(list)
    disconnects: list[Disconnect] = attrs.Factory(list)
    _changed: trio.Event = attrs.Factory(trio.Event)

    def push(self, steps: Iterable[Step]) -> None:
        """Append steps to the script."""
        self.steps.extend(steps)

    def reset(self) -> None:
        """Forget the script and every record."""
        self.steps.clear()
        self.requests.clear()
        self.disconnects.clear()
        self._notify()

    def next_step(self, path: str, body: Any) -> tuple[Step, str | None]:
        """The step answering this request, and an error message override."""
        if self.steps:
            return self.steps.popleft(), None
        if self.rule_mode:
            step = rules.rule_step(path, body)
            if self.rule_latency:
                step = attrs.evolve(step, delay_first_byte=self.rule_latency)
            return step, None
        return self.default, (_EXHAUSTED_MESSAGE if self.default is EXHAUSTED else None)

    def record_disconnect(self, index: int, path: str) -> None:
        """Note that the client went away mid-reply."""
        self.disconnects.append(Disconnect(request_index=index, path=path, at=trio.current_time()))
        self._notify()

    def record_request(
        self, method: str, path: str, headers: dict[str, str], body: Any, client_port: int | None = None
    ) -> RecordedRequest:
        """Keep one received request for assertions."""
        req = RecordedRequest(
            index=len(self.requests), method=method, path=path, headers=headers, body=body, client_port=client_port
        )
        self.requests.append(req)
        self._notify()
        return req

    async def wait_changed(self) -> None:
        """Block until a request or disconnect is recorded."""
        await self._changed.wait()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = trio.Event()


class ScriptedProviderApp:
    """ASGI app speaking the three provider wire protocols from a script."""

    def __init__(self, state: ScriptState) -> None:
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """ASGI entry point."""
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        raw = await _read_body(receive)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        path, method = scope["path"], scope["method"]
        if path.startswith("/_admin/"):
            await self._admin(method, path, raw, send)
            return
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        client = scope.get("client")
        req = self.state.record_request(method, path, headers, body, client[1] if client else None)
        if method == "GET" and path == "/v1/models":
            await _json(send, 200, self._models(headers))
        elif method == "POST" and path in _PROVIDER_PATHS:
            await self._provider(req, receive, send)
        elif method == "POST" and path == "/v1/audio/transcriptions":
            await _json(send, *transcribe_form(headers.get("content-type", ""), raw))
        else:
            await _json(send, 404, wire_chat.error_body(404, f"no route for {method} {path}"))

    def _models(self, headers: Mapping[str, str]) -> dict[str, Any]:
        if "anthropic-version" in headers:
            data = [
                {
                    "type": "model",
                    "id": m,
                    "display_name": m,
                    "created_at": "2025-01-01T00:00:00Z",
                    "max_input_tokens": n,
                }
                for m, n in self.state.models.items()
            ]
            return {"data": data, "has_more": False, "first_id": data[0]["id"] if data else None, "last_id": None}
        return {
            "object": "list",
            "data": [
                {"id": m, "object": "model", "created": 1_700_000_000, "owned_by": "scripted", "context_length": n}
                for m, n in self.state.models.items()
            ],
        }

    async def _provider(self, req: RecordedRequest, receive: Receive, send: Send) -> None:
        wire = _wire(req.path)
        if not isinstance(req.body, dict):
            log.warning("scripted provider: request %d to %s is not a JSON object", req.index, req.path)
            await _json(send, 400, wire.error_body(400, "request body must be a JSON object"))
            return
        try:
            step, message = self.state.next_step(req.path, req.body)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            # Rule mode reads the conversation; a malformed one must not kill the server.
            log.warning("scripted provider: rules could not read request %d: %r", req.index, exc)
            await _json(send, 400, wire.error_body(400, f"scripted rules could not read this request: {exc!r}"))
            return
        r = Render(
            step=step,
            model=str(req.body.get("model", "scripted-model")),
            seq=req.index,
            prompt_tokens=estimate_prompt_tokens(req.body.get("messages") or req.body.get("input")),
        )
        reply = _Reply(self.state, req)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(reply.watch_disconnect, receive, nursery.cancel_scope)
            await reply.send(r, wire, message, send)
            reply.finished = True
            nursery.cancel_scope.cancel()

    async def _admin(self, method: str, path: str, raw: bytes, send: Send) -> None:
        state = self.state
        if method == "POST" and path == "/_admin/script":
            try:
                steps = parse_steps(json.loads(raw or b"null"))
            except (ValueError, ScriptError) as exc:
                log.warning("scripted provider: rejected script: %s", exc)
                await _json(send, 400, {"error": str(exc)})
                return
            state.push(steps)
            await _json(send, 200, {"queued": len(state.steps)})
        elif method == "GET" and path == "/_admin/requests":
            await _json(
                send,
                200,
                {
                    "requests": [r.as_dict() for r in state.requests],
                    "disconnects": [attrs.asdict(d) for d in state.disconnects],
                    "queued": len(state.steps),
                },
            )
        elif method == "POST" and path == "/_admin/reset":
            state.reset()
            await _json(send, 200, {"reset": True})
        else:
            await _json(send, 404, {"error": f"no admin route for {method} {path}"})


def _wire(path: str) -> Any:
    if path == "/v1/messages":
        return wire_anthropic
    if path == "/v1/responses":
        return wire_responses
    return wire_chat


def _request_id_header(path: str, index: int) -> dict[str, str]:
    name = "request-id" if path == "/v1/messages" else "x-request-id"
    return {name: f"req_{index:06d}"}


@attrs.define
class _Reply:
    """One answer being sent, and whether the client left before its end."""

    state: ScriptState
    req: RecordedRequest
    finished: bool = False

    async def watch_disconnect(self, receive: Receive, cancel_scope: trio.CancelScope) -> None:
        """Record a client that leaves mid-reply and stop replying to it."""
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                if not self.finished:
                    self.state.record_disconnect(self.req.index, self.req.path)
                cancel_scope.cancel()
                return

    async def send(self, r: Render, wire: Any, message: str | None, send: Send) -> None:
        """Pace and send the whole reply for one step."""
        step = r.step
        body = self.req.body
        if step.delay_first_byte:
            await trio.sleep(step.delay_first_byte)
        if step.error is not None:
            await _error(send, wire, step.error, message)
        elif not body.get("stream"):
            await _json(send, 200, wire.complete_body(r), _request_id_header(self.req.path, self.req.index))
        elif wire is wire_chat:
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            await self._stream(r, wire, wire_chat.stream_frames(r, include_usage), send)
        else:
            await self._stream(r, wire, wire.stream_frames(r), send)

    async def _stream(self, r: Render, wire: Any, frames: list[bytes], send: Send) -> None:
        step = r.step
        mid = step.mid_stream_error
        headers = {"content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache"}
        headers |= _request_id_header(self.req.path, self.req.index)
        await send({"type": "http.response.start", "status": 200, "headers": _encode(headers)})
        for n, frame in enumerate(frames):
            if mid is not None and n == mid.after_chunks:
                error = wire.mid_stream_error(r, mid.type, mid.message)
                await send({"type": "http.response.body", "body": error, "more_body": False})
                return
            if step.drop_after_chunks is not None and n == step.drop_after_chunks:
                # Returning with the body unfinished makes the server close the connection.
                self.finished = True
                return
            if step.stall_after_chunks is not None and n == step.stall_after_chunks:
                while step.keepalive_every:
                    await send({"type": "http.response.body", "body": b": keepalive\n\n", "more_body": True})
                    await trio.sleep(step.keepalive_every)
                await trio.sleep_forever()
            if n and step.chunk_delay:
                await trio.sleep(step.chunk_delay)
            await send({"type": "http.response.body", "body": frame, "more_body": n < len(frames) - 1 or bool(step.hold_end)})
        if step.hold_end:
            await trio.sleep(step.hold_end)
            # Ending the body ends the request cycle, which the server may report as a disconnect first.
            self.finished = True
            await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _error(send: Send, wire: Any, spec: ErrorSpec, message: str | None) -> None:
    body = spec.body if spec.body is not None else wire.error_body(spec.status, message)
    extra = dict(spec.headers)
    if isinstance(body, str):
        await _send(send, spec.status, body.encode(), {"content-type": "text/plain; charset=utf-8", **extra})
    else:
        await _json(send, spec.status, body, extra)


async def _json(send: Send, status: int, body: Any, headers: Mapping[str, str] | None = None) -> None:
    await _send(send, status, json.dumps(body).encode(), {"content-type": "application/json", **(headers or {})})


async def _send(send: Send, status: int, payload: bytes, headers: Mapping[str, str]) -> None:
    all_headers = {**headers, "content-length": str(len(payload))}
    await send({"type": "http.response.start", "status": status, "headers": _encode(all_headers)})
    await send({"type": "http.response.body", "body": payload, "more_body": False})


def _encode(headers: Mapping[str, str]) -> list[tuple[bytes, bytes]]:
    return [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]


async def _read_body(receive: Receive) -> bytes:
    parts = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        parts.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    return b"".join(parts)


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
