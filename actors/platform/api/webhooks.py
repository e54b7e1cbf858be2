"""Generic inbound webhooks: ``POST /v1/webhooks/<name>`` starts or continues a session, and its answer
is POSTed to the hook's callback URL (or returned to a caller that waits for it).

Each delivery is checked in this order, and refused with a JSON ``{"error": ...}``, its status and a log
line: an unknown or disabled hook (404), a body over ``max_body_bytes`` (413), a bad signature or a
timestamp outside the replay window (401), the hook's rate (429 with ``Retry-After``), a body that is not
a JSON object (400), a field the session key or the prompt needs that is missing (422). A delivery id
seen before (``Idempotency-Key``, ``X-Request-ID``, ``X-GitHub-Delivery``, ``svix-id``; else the signature
itself, so a byte-identical replay counts too) is answered ``duplicate`` and starts nothing.

A hook's session has nobody to ask, so it is not interactive: a command needing approval is refused with
a note to the model, unless the hook says ``approvals: approve``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

import attrs
import httpx2
import trio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from actors.platform.api.body import read_body
from actors.platform.api.errors import ApiError, BadRequest, NotFound, TooManyRuns, Unauthorized
from actors.platform.api.gateway import API_TOOLSETS, KeyedLocks
from actors.platform.api.wire import TurnUsage
from actors.platform.api.turns import FinishedTurn, TurnLost, TurnWatch, send_watched
from actors.platform.api.webhook_signing import SIGNATURE_HEADER, TIMESTAMP_HEADER, BadSignature, signed_headers, verify
from actors.session import SessionBusy, SessionNotFound, SessionOptions, SessionService, TooManyRunningTurns
from config.webhook import MIN_SECRET_LENGTH, WebhookConfig, WebhookRoute
from messages.untrusted import UntrustedJsonError
from messages.untrusted import loads as loads_untrusted

__all__ = ["WEBHOOK_SOURCE", "MissingField", "WebhookDesk", "webhook_session_id"]

log = logging.getLogger("hermes_actors.webhook")

#: The ``source`` of every session a hook creates.
WEBHOOK_SOURCE = "webhook"
#: Headers a sender names its delivery by, the first present wins (a retry repeats it).
_DELIVERY_HEADERS = ("idempotency-key", "x-request-id", "x-github-delivery", "svix-id")
#: The rate limit's window.
_WINDOW_SECONDS = 60.0
#: The longest payload excerpt ``{__raw__}`` puts in a prompt.
_RAW_CHARS = 4000


class MissingField(ApiError):
    """A field the hook's session key or prompt names is not in the payload (422)."""

    status = 422
    type = "invalid_request_error"


def webhook_session_id(hook: str, key: str) -> str:
    """The id of the session a hook's deliveries with session key ``key`` share (stable across restarts)."""
    return "webhook-" + hashlib.sha256(f"{hook}\0{key}".encode()).hexdigest()[:32]


def _field(payload: Any, dotted: str) -> Any:
    """The payload's value at ``a.b`` (KeyError when absent)."""
    value = payload
    for part in dotted.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            raise KeyError(dotted)
    return value


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def render_prompt(template: str, payload: dict[str, Any], hook: str) -> str:
    """The hook's prompt with ``{field}`` / ``{a.b}`` filled from ``payload``, ``{__raw__}`` with the payload.

    Raises:
        MissingField: the template names a field the payload lacks.
    """
    raw = json.dumps(payload, indent=2, ensure_ascii=False)[:_RAW_CHARS]
    if not template:
        return f"Webhook delivery on hook {hook!r}:\n\n```json\n{raw}\n```"
    out: list[str] = []
    rest = template
    while (start := rest.find("{")) >= 0 and (end := rest.find("}", start)) > start:
        out.append(rest[:start])
        name = rest[start + 1 : end]
        if name == "__raw__":
            out.append(raw)
        elif name and all(c.isalnum() or c in "._-" for c in name):
            try:
                out.append(_text(_field(payload, name)))
            except KeyError:
                raise MissingField(f"the payload has no field {name!r} (the hook's prompt needs it)", param=name) from None
        else:
            out.append(rest[start : end + 1])
        rest = rest[end + 1 :]
    out.append(rest)
    return "".join(out)


@attrs.define
class HookCounts:
    """What one hook has seen, for ``status``."""

    received: int = 0
    accepted: int = 0
    rejected: int = 0
    duplicates: int = 0
    answered: int = 0
    callbacks_delivered: int = 0
    callback_failures: int = 0
    callbacks_abandoned: int = 0


@attrs.frozen
class _Hook:
    name: str
    route: WebhookRoute
    secret: str = attrs.field(repr=False)


class WebhookDesk:
    """The webhook endpoint over the sessions service.

    Args:
        sessions: the daemon's session service.
        config: the ``platforms.webhook`` section.
        environ: where the routes' ``secret_env`` variables are looked up.
        cwd: the directory hook sessions work in.
        spawn: starts a background task (the API server's nursery), for a turn whose answer is called back.
        client: the HTTP client callbacks are posted with.
    """

    def __init__(
        self, sessions: SessionService, config: WebhookConfig, environ: Mapping[str, str], cwd: str,
        spawn: Callable[..., None], client: httpx2.AsyncClient,
    ) -> None:
        self.sessions = sessions
        self.config = config
        self.cwd = cwd
        self._spawn = spawn
        self._client = client
        self.hooks: dict[str, _Hook] = {}
        self.counts: dict[str, HookCounts] = {}
        self._seen: dict[str, float] = {}
        self._rates: dict[str, deque[float]] = {}
        self._creating = KeyedLocks()
        for name, route in config.routes.items():
            if not route.enabled:
                continue
            secret = (environ.get(route.secret_env) if route.secret_env else None) or route.secret
            if not secret or len(secret) < MIN_SECRET_LENGTH:
                where = f"{route.secret_env} or secret" if route.secret_env else "secret (or secret_env)"
                log.error(
                    "webhook: hook %r has no secret of %d characters or more (%s); not served", name, MIN_SECRET_LENGTH, where
                )
                continue
            self.hooks[name] = _Hook(name, route, secret)
            self.counts[name] = HookCounts()

    def snapshot(self) -> dict[str, dict[str, int]]:
        """Each served hook's counts."""
        return {name: attrs.asdict(counts) for name, counts in self.counts.items()}

    async def handle(self, request: Request) -> Response:
        """Answer one delivery (never raises: every refusal is a JSON error and a log line)."""
        name = request.path_params["name"]
        hook = self.hooks.get(name)
        counts = self.counts.get(name)
        try:
            if hook is None or counts is None:
                raise NotFound(f"no webhook {name!r}")
            counts.received += 1
            return await self._deliver(hook, counts, request)
        except ApiError as exc:
            if counts is not None:
                counts.rejected += 1
            log.warning("webhook: %s refused (%d): %s", name, exc.status, exc)
            return JSONResponse({"error": str(exc)}, status_code=exc.status, headers=dict(exc.headers))
        except Exception as exc:
            if counts is not None:
                counts.rejected += 1
            log.error("webhook: %s failed: %r", name, exc, exc_info=exc)
            return JSONResponse({"error": "internal error; see the daemon's log"}, status_code=500)

    async def _deliver(self, hook: _Hook, counts: HookCounts, request: Request) -> Response:
        body = await read_body(request, self.config.max_body_bytes)
        signature = request.headers.get(SIGNATURE_HEADER)
        try:
            timestamp = request.headers.get(TIMESTAMP_HEADER)
            verify(hook.secret, body, timestamp, signature, time.time(), self.config.replay_window_seconds)
        except BadSignature as exc:
            # Why, in the log only: a forger learns nothing from the answer.
            log.warning("webhook: %s: %s", hook.name, exc)
            raise Unauthorized("invalid signature") from exc
        self._check_rate(hook.name)
        try:
            payload = loads_untrusted(body)
        except UntrustedJsonError as exc:
            raise BadRequest(f"the body {exc}") from exc
        if not isinstance(payload, dict):
            raise BadRequest("the body must be a JSON object")
        delivery = self._delivery_id(request, signature or "")
        key = self._session_key(hook, payload)
        text = render_prompt(hook.route.prompt, payload, hook.name)
        if not self._remember(f"{hook.name}\0{delivery}"):
            counts.duplicates += 1
            log.info("webhook: %s delivery %s is a duplicate; not run again", hook.name, delivery)
            return JSONResponse({"status": "duplicate", "delivery_id": delivery})
        try:
            session_id = await self._open(hook, key)
            watch = await send_watched(self.sessions, session_id, text, source=WEBHOOK_SOURCE, label=f"webhook:{hook.name}")
        except BaseException as exc:
            self._seen.pop(f"{hook.name}\0{delivery}", None)  # nothing ran: a retry may try again
            if isinstance(exc, (TooManyRunningTurns, SessionBusy)):
                raise TooManyRuns(str(exc)) from exc
            if isinstance(exc, SessionNotFound):
                raise ApiError(f"the hook's session went away: {exc}") from exc
            raise
        counts.accepted += 1
        wait = request.query_params.get("wait", "").lower() in ("1", "true", "yes") or hook.route.callback_url is None
        how = "waited for" if wait else "called back"
        log.info("webhook: %s delivery %s -> session %s (%s)", hook.name, delivery, session_id, how)
        if wait:
            turn = await self._finish(hook, counts, watch)
            return JSONResponse(_answer(hook.name, delivery, session_id, key, turn))
        self._spawn(self._answer_later, hook, counts, watch, delivery, key)
        return JSONResponse({"status": "accepted", "delivery_id": delivery, "session_id": session_id}, status_code=202)

    def _check_rate(self, name: str) -> None:
        now = trio.current_time()
        stamps = self._rates.setdefault(name, deque())
        while stamps and stamps[0] <= now - _WINDOW_SECONDS:
            stamps.popleft()
        if len(stamps) >= self.config.rate_limit:
            raise _RateLimited(
                f"hook {name!r} takes {self.config.rate_limit} deliveries a minute",
                retry_after=max(1, math.ceil(stamps[0] + _WINDOW_SECONDS - now)),
            )
        stamps.append(now)

    @staticmethod
    def _delivery_id(request: Request, signature: str) -> str:
        for header in _DELIVERY_HEADERS:
            value = request.headers.get(header)
            if value:
                return value[:200]
        return "sig-" + hashlib.sha256(signature.encode()).hexdigest()[:24]

    def _remember(self, delivery: str) -> bool:
        """Record ``delivery``; False when it was seen within ``idempotency_seconds``."""
        now = trio.current_time()
        ttl = self.config.idempotency_seconds
        for old in [d for d, seen in self._seen.items() if seen <= now - ttl]:
            del self._seen[old]
        if delivery in self._seen:
            return False
        self._seen[delivery] = now
        return True

    @staticmethod
    def _session_key(hook: _Hook, payload: dict[str, Any]) -> str | None:
        field = hook.route.session_key
        if field is None:
            return None
        try:
            value = _field(payload, field)
        except KeyError:
            raise MissingField(f"the payload has no field {field!r} (the hook's session key)", param=field) from None
        if value is None or value == "" or isinstance(value, (dict, list)):
            raise MissingField(f"the payload's {field!r} must be a string or a number", param=field)
        return _text(value)

    def _options(self, route: WebhookRoute) -> SessionOptions:
        return SessionOptions(
            cwd=self.cwd, source=WEBHOOK_SOURCE, interactive=False, auto_approve=route.approvals == "approve",
            toolsets=route.toolsets if route.toolsets is not None else API_TOOLSETS, sandbox=route.sandbox,
        )

    async def _open(self, hook: _Hook, key: str | None) -> str:
        """The session of ``key`` (created when absent), or a new one when the hook has no session key."""
        if key is None:
            return await self.sessions.create_session(self._options(hook.route))
        session_id = webhook_session_id(hook.name, key)
        async with self._creating.hold(session_id):
            try:
                await self.sessions.get(session_id)
            except SessionNotFound:
                await self.sessions.create_session(self._options(hook.route), session_id=session_id)
        return session_id

    async def _finish(self, hook: _Hook, counts: HookCounts, watch: TurnWatch) -> FinishedTurn:
        """The watched turn once it has ended (an ``error`` one when it is lost or outlasts ``wait_seconds``)."""
        try:
            with trio.fail_after(self.config.wait_seconds):
                while await watch.next_event() is not None:
                    pass
        except (TurnLost, trio.TooSlowError) as exc:
            log.error("webhook: %s: session %s gave no answer: %s", hook.name, watch.session_id, exc)
            return FinishedTurn("", "error", str(exc) or "timed out", TurnUsage(0, 0))
        finally:
            watch.close()  # also when the waiting caller hung up (the turn itself goes on)
        assert watch.outcome is not None
        counts.answered += 1
        return watch.outcome

    async def _answer_later(self, hook: _Hook, counts: HookCounts, watch: TurnWatch, delivery: str, key: str | None) -> None:
        turn = await self._finish(hook, counts, watch)
        await self.call_back(hook, counts, _answer(hook.name, delivery, watch.session_id, key, turn), delivery)

    async def call_back(self, hook: _Hook, counts: HookCounts, answer: dict[str, Any], delivery: str) -> None:
        """POST ``answer`` to the hook's callback URL, signed, retried with doubling back-off on failure."""
        url = hook.route.callback_url
        assert url is not None
        body = json.dumps(answer, ensure_ascii=False).encode("utf-8")
        delay = self.config.callback_backoff_seconds
        for attempt in range(1, self.config.callback_attempts + 1):
            signed = signed_headers(hook.secret, body, time.time())  # signed afresh: a late retry is no replay
            headers = {"Content-Type": "application/json", "Idempotency-Key": delivery, **signed}
            try:
                with trio.fail_after(self.config.callback_timeout_seconds):
                    response = await self._client.post(url, content=body, headers=headers)
                if 200 <= response.status_code < 300:
                    counts.callbacks_delivered += 1
                    return
                problem = f"answered {response.status_code}"
            except (httpx2.HTTPError, trio.TooSlowError, OSError) as exc:
                problem = f"failed: {exc!r}"
            counts.callback_failures += 1
            log.warning(
                "webhook: %s callback for %s (try %d of %d) %s", hook.name, delivery, attempt, self.config.callback_attempts, problem
            )
            if attempt < self.config.callback_attempts:
                await trio.sleep(delay)
                delay *= 2
        counts.callbacks_abandoned += 1
        log.error("webhook: %s callback for %s abandoned after %d tries", hook.name, delivery, self.config.callback_attempts)


def _answer(hook: str, delivery: str, session_id: str, key: str | None, turn: FinishedTurn) -> dict[str, Any]:
    return {
        "hook": hook, "delivery_id": delivery, "session_id": session_id, "session_key": key,
        "status": turn.reason, "answer": turn.final_text, "error": turn.error,
    }


class _RateLimited(TooManyRuns):
    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message)
        self._retry_after = retry_after

    @property
    def headers(self) -> Mapping[str, str]:
        return {"Retry-After": str(self._retry_after)}
