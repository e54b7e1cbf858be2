"""The API's ASGI application: routes, bearer auth, the body cap and OpenAI-shaped errors.

Every endpoint but the health checks needs the bearer key. Errors are answered
as ``{"error": {...}}`` with their status (and ``Retry-After`` on a 429); an
unexpected exception is logged and answered 500 without its details, so
nothing internal (or secret) leaks to a client. Completions are dispatched
before Starlette (:mod:`.front`); Starlette's router answers the rest, and the
``lifespan`` scope hypercorn sends.
"""

from __future__ import annotations

import functools
import json
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, get_args

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp

from actors.platform.api.auth import Authenticator
from actors.platform.api.body import read_json
from actors.platform.api.checkpoints import session_checkpoints
from actors.platform.api.dashboard import DashboardDesk, dashboard_routes
from actors.platform.api.completions import SESSION_HEADER, chat_completion
from actors.platform.api.errors import ApiError, BadRequest, NotFound, error_response
from actors.platform.api.front import COMPLETIONS_PATH, ApiFront
from actors.platform.api.gateway import ApiGateway
from actors.platform.api.runs import Run, RunRegistry
from actors.platform.api.sse import Emit, SseResponse
from actors.platform.api.webhooks import WebhookDesk
from actors.platform.api.wire import event_frame, parse_completion, parse_run
from config.api import ApiServerConfig
from tools.context import ApprovalDecision

__all__ = ["build_app"]

log = logging.getLogger("hermes_actors.api")

Handler = Callable[[Request], Awaitable[Any]]
#: What an approval may be answered with (``always`` saves the pattern in config.yaml).
_APPROVAL_CHOICES = get_args(ApprovalDecision)


class _Api:
    """The endpoints, over the gateway and the run registry."""

    def __init__(self, gateway: ApiGateway, runs: RunRegistry, auth: Authenticator, models: tuple[str, ...]) -> None:
        self.gateway = gateway
        self.runs = runs
        self.auth = auth
        self.models = models
        self.limit = gateway.config.max_body_bytes
        self.started = int(time.time())

    def endpoint(self, handler: Handler, *, public: bool = False) -> Handler:
        """``handler`` behind auth, answering errors as OpenAI error objects."""

        @functools.wraps(handler)
        async def guarded(request: Request) -> Any:
            try:
                if not public:
                    client = request.client.host if request.client is not None else "?"
                    self.auth.check(request.headers.get("authorization"), client)
                return await handler(request)
            except ApiError as exc:
                if exc.status >= 500:
                    log.error("api: %s %s: %s", request.method, request.url.path, exc)
                return error_response(exc)
            except Exception as exc:
                log.error("api: %s %s failed: %r", request.method, request.url.path, exc, exc_info=exc)
                return error_response(ApiError("internal error; see the daemon's log"))

        return guarded

    async def health(self, request: Request) -> Response:
        return JSONResponse({"status": "ok", "platform": "hermes-actors", "in_flight": self.gateway.in_flight})

    async def list_models(self, request: Request) -> Response:
        data = [{"id": m, "object": "model", "created": self.started, "owned_by": "hermes-actors"} for m in self.models]
        return JSONResponse({"object": "list", "data": data})

    async def completions(self, request: Request) -> Any:
        parsed = parse_completion(await read_json(request, self.limit))
        return await chat_completion(self.gateway, parsed, request.headers.get(SESSION_HEADER))

    async def create_run(self, request: Request) -> Response:
        run = await self.runs.create(parse_run(await read_json(request, self.limit)))
        return JSONResponse(run.to_json(), status_code=202)

    async def get_run(self, request: Request) -> Response:
        return JSONResponse(self.runs.get(request.path_params["run_id"]).to_json())

    async def stop_run(self, request: Request) -> Response:
        return JSONResponse(await self.runs.stop(request.path_params["run_id"]))

    async def approve_run(self, request: Request) -> Response:
        body = await read_json(request, self.limit)
        if not isinstance(body, dict):
            raise BadRequest("the request body must be a JSON object")
        choice = body.get("choice", body.get("answer"))
        if not isinstance(choice, str) or choice not in _APPROVAL_CHOICES:
            raise BadRequest(f"'choice' must be one of {list(_APPROVAL_CHOICES)}", param="choice")
        request_id = body.get("request_id")
        if request_id is not None and not isinstance(request_id, str):
            raise BadRequest("'request_id' must be a string", param="request_id")
        return JSONResponse(await self.runs.answer(request.path_params["run_id"], choice, request_id))

    async def list_checkpoints(self, request: Request) -> Response:
        return JSONResponse(await session_checkpoints(self.gateway, request.path_params["name"], "list"))

    async def checkpoint_diff(self, request: Request) -> Response:
        params = request.path_params
        return JSONResponse(await session_checkpoints(self.gateway, params["name"], "diff", params["number"]))

    async def restore_checkpoint(self, request: Request) -> Response:
        params = request.path_params
        return JSONResponse(await session_checkpoints(self.gateway, params["name"], "restore", params["number"]))

    async def run_events(self, request: Request) -> SseResponse:
        run = self.runs.get(request.path_params["run_id"])
        raw = request.headers.get("last-event-id") or request.query_params.get("after")
        if raw is not None and not raw.strip().isdigit():
            raise BadRequest("Last-Event-ID must be an event sequence number")
        return SseResponse(lambda emit: _stream_run(run, int(raw) if raw is not None else None, emit))


async def _stream_run(run: Run, last: int | None, emit: Emit) -> None:
    while True:
        pending = run.events_after(last)
        if not pending:
            if run.status.finished:
                end = json.dumps({"run_id": run.run_id, "status": run.status.value})
                await emit(f"event: end\ndata: {end}\n\n".encode())
                return
            await run.wait_changed()
            continue
        for event in pending:
            await emit(event_frame(event["id"], event))
            last = event["id"]


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        return error_response(NotFound(f"no route {request.method} {request.url.path}"))
    return JSONResponse(
        {"error": {"message": exc.detail, "type": "invalid_request_error", "param": None, "code": None}},
        status_code=exc.status_code,
        headers=exc.headers,
    )


def build_app(
    gateway: ApiGateway, runs: RunRegistry, auth: Authenticator, models: tuple[str, ...], config: ApiServerConfig,
    webhooks: WebhookDesk | None = None, dashboard: DashboardDesk | None = None, platform_routes: Sequence[BaseRoute] = (),
) -> ASGIApp:
    """The ASGI application of the API; ``webhooks``' routes, signed instead of keyed, and the
    ``dashboard``'s pages (logged in with the key), when given, and ``platform_routes`` (a messaging
    platform's webhook, such as WhatsApp's), which check their own signatures."""
    api = _Api(gateway, runs, auth, models)
    e = api.endpoint
    completions = e(api.completions)
    routes: list[BaseRoute] = [
        Route("/health", e(api.health, public=True), methods=["GET"]),
        Route("/v1/health", e(api.health, public=True), methods=["GET"]),
        Route("/v1/models", e(api.list_models), methods=["GET"]),
        # Answered by the front below; kept here so a wrong method is a 405, as on every route.
        Route(COMPLETIONS_PATH, completions, methods=["POST"]),
        Route("/v1/runs", e(api.create_run), methods=["POST"]),
        Route("/v1/runs/{run_id}", e(api.get_run), methods=["GET"]),
        Route("/v1/runs/{run_id}/events", e(api.run_events), methods=["GET"]),
        Route("/v1/runs/{run_id}/stop", e(api.stop_run), methods=["POST"]),
        Route("/v1/runs/{run_id}/approval", e(api.approve_run), methods=["POST"]),
        Route("/v1/sessions/{name}/checkpoints", e(api.list_checkpoints), methods=["GET"]),
        Route("/v1/sessions/{name}/checkpoints/{number}/diff", e(api.checkpoint_diff), methods=["GET"]),
        Route("/v1/sessions/{name}/checkpoints/{number}/restore", e(api.restore_checkpoint), methods=["POST"]),
    ]
    if webhooks is not None:
        routes.append(Route("/v1/webhooks/{name}", webhooks.handle, methods=["POST"]))
    if dashboard is not None:
        routes.extend(dashboard_routes(dashboard, auth, gateway.config.max_body_bytes))
    routes.extend(platform_routes)
    app: ASGIApp = ApiFront(completions, Starlette(routes=routes, exception_handlers={HTTPException: _http_error}))
    if config.cors_origins:
        # Outside the front, so completions get the same CORS answers (and preflights) as every route.
        app = CORSMiddleware(
            app,
            allow_origins=list(config.cors_origins),
            allow_methods=["GET", "POST", "OPTIONS"],
            allow_headers=["Authorization", "Content-Type", SESSION_HEADER, "Last-Event-ID"],
            expose_headers=[SESSION_HEADER],
        )
    return app
