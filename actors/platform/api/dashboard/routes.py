"""The dashboard's HTTP routes under ``/dashboard``, on the API's port and behind its key.

Who may use them: a browser logged in with the key (a cookie, :mod:`.logins`), or a client sending
the bearer key as every API call does. A POST authenticated by the cookie must also carry the
login's CSRF token in a header and, when the browser names one, come from this origin. When the API
runs without a key (loopback and ``auth_disabled``), opening the page logs the browser in by itself,
and POSTs still need the cookie and its CSRF token, so another site cannot drive the daemon through
a browser on this machine.

Every response carries a strict Content-Security-Policy: the page runs only its own script, loads
nothing from elsewhere and cannot be framed. The page renders all data with ``textContent``.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TypeVar
from urllib.parse import parse_qs, urlsplit

import trio
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from actors.platform.api.auth import Authenticator
from actors.platform.api.body import read_body, read_json
from actors.platform.api.dashboard.desk import DashboardDesk
from actors.platform.api.dashboard.logins import COOKIE_NAME, CSRF_HEADER, LOGIN_SECONDS, Login, LoginBook
from actors.platform.api.dashboard.streams import HeldStream, SharedPicture, relay_session, stream_state
from actors.platform.api.errors import (
    ApiError,
    BadRequest,
    Conflict,
    KeyBackOff,
    NotFound,
    TooManyRuns,
    Unauthorized,
    Unavailable,
    error_response,
)
from actors.platform.api.sse import Emit, SseResponse
from control.errors import RequestFailed
from store.errors import SessionOwnedElsewhere

__all__ = ["BASE", "CONTENT_SECURITY_POLICY", "dashboard_routes"]

log = logging.getLogger("hermes_actors.dashboard")

#: Where the dashboard is served.
BASE = "/dashboard"
#: What the page may load and run: its own script and style, its own API, nothing else.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
_SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    # Not no-referrer: under it a browser sends "Origin: null" on its own form POSTs, which the origin check refuses.
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
#: A stream's headers (its events are data, never a page).
_STREAM_HEADERS = {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"}
_STATIC = Path(__file__).resolve().parent / "static"
#: The files the page is made of, and their types (nothing else under static/ is served).
_ASSETS = {
    "index.html": "text/html; charset=utf-8",
    "login.html": "text/html; charset=utf-8",
    "dashboard.js": "text/javascript; charset=utf-8",
    "dashboard.css": "text/css; charset=utf-8",
}
#: A login form's body is one short field.
_LOGIN_BODY_LIMIT = 4096
#: What a failed login page shows (the login page's error line is hidden until then).
_LOGIN_ERROR_MARK = b'<p id="login-error" class="error" hidden>'
#: What a login during its back-off shows instead.
_LOGIN_WAIT_MARK = b'<p id="login-wait" class="error" hidden>'
#: RequestFailed codes as HTTP errors.
_FAILURES: dict[str, type[ApiError]] = {
    "not_found": NotFound, "invalid": BadRequest, "busy": TooManyRuns, "no_turn": Conflict, "conflict": Conflict,
}

#: What a handler answers: a response, or a stream (an ASGI application of its own).
Answer = Response | HeldStream
Handler = Callable[[Request, Login | None], Awaitable[Answer]]


R = TypeVar("R", bound=Response)


def _with_headers(response: R) -> R:
    """``response`` with the security headers."""
    response.headers.update(_SECURITY_HEADERS)
    return response


class _Assets:
    """The page's files, read once off the event loop."""

    def __init__(self) -> None:
        self._files: dict[str, bytes] | None = None

    async def get(self, name: str) -> bytes:
        if self._files is None:
            self._files = await trio.to_thread.run_sync(lambda: {n: (_STATIC / n).read_bytes() for n in _ASSETS})
        return self._files[name]


class _Dashboard:
    """The routes' handlers, over the desk."""

    def __init__(self, desk: DashboardDesk, auth: Authenticator, limit: int) -> None:
        self.desk = desk
        self.auth = auth
        self.limit = limit
        self.logins = LoginBook()
        self.pictures = SharedPicture(desk.state)
        self.assets = _Assets()

    # -- who is asking ------------------------------------------------------------------------

    def _caller(self, request: Request) -> tuple[Login | None, bool]:
        """The cookie's login, and whether the request carries the right bearer key instead."""
        login = self.logins.find(request.cookies.get(COOKIE_NAME))
        header = request.headers.get("authorization")
        bearer = False
        if login is None and header and self.auth.enabled:
            self.auth.check(header, _peer(request))
            bearer = True
        return login, bearer

    def guarded(self, handler: Handler, *, post: bool = False) -> Callable[[Request], Awaitable[Answer]]:
        """``handler`` behind the login (and, for POSTs, the CSRF token and origin), errors as JSON."""

        @functools.wraps(handler)
        async def run(request: Request) -> Answer:
            try:
                login, bearer = self._caller(request)
                if post and not bearer:
                    self._check_post(request, login)
                elif login is None and not bearer and self.auth.enabled:
                    raise Unauthorized("log in to the dashboard first (POST /dashboard/login with the API key)")
                answer = await handler(request, login)
                return _with_headers(answer) if isinstance(answer, Response) else answer  # a stream has its own
            except RequestFailed as exc:
                return _with_headers(error_response(_FAILURES.get(exc.code, Unavailable)(str(exc))))
            except SessionOwnedElsewhere as exc:
                # The CLI's connection forwards these; the dashboard shows this process's sessions only.
                return _with_headers(error_response(Unavailable(f"the session runs in another process: {exc}")))
            except ApiError as exc:
                if exc.status >= 500:
                    log.error("dashboard: %s %s: %s", request.method, request.url.path, exc)
                return _with_headers(error_response(exc))
            except Exception as exc:
                log.error("dashboard: %s %s failed: %r", request.method, request.url.path, exc, exc_info=exc)
                return _with_headers(error_response(ApiError("internal error; see the daemon's log")))

        return run

    def _check_post(self, request: Request, login: Login | None) -> None:
        if login is None:
            raise Unauthorized("log in to the dashboard first (POST /dashboard/login with the API key)")
        if not _same_origin(request):
            raise BadRequest("cross-origin request refused")
        if not LoginBook.csrf_matches(login, request.headers.get(CSRF_HEADER)):
            raise BadRequest(f"missing or wrong {CSRF_HEADER} header")

    # -- pages --------------------------------------------------------------------------------

    async def page(self, request: Request) -> Response:
        """The dashboard, or (not logged in) the way to the login form."""
        login = self.logins.find(request.cookies.get(COOKIE_NAME))
        if login is None and self.auth.enabled:
            return _with_headers(RedirectResponse(f"{BASE}/login", status_code=303))
        response = await self._asset("index.html")
        if login is None:  # no key is needed: this browser is logged in by opening the page
            self._set_cookie(request, response, self.logins.open())
        return response

    async def login_form(self, request: Request) -> Response:
        return await self._asset("login.html")

    async def login(self, request: Request) -> Response:
        """Check the posted key; the browser gets a login cookie, or the form again with a 401 (a 429, the
        key unchecked, while the client's back-off after a wrong key lasts)."""
        if not _same_origin(request):
            return _with_headers(error_response(BadRequest("cross-origin request refused")))
        try:
            body = await read_body(request, _LOGIN_BODY_LIMIT)
        except ApiError as exc:
            return _with_headers(error_response(exc))
        peer = _peer(request)
        wait = self.auth.throttle.wait_left(peer)
        if wait > 0:
            log.warning("dashboard: refused a login from %s unchecked: %.1f s of its back-off are left", peer, wait)
            return await self._login_form(_LOGIN_WAIT_MARK, 429, KeyBackOff(wait).headers)
        given = parse_qs(body.decode("utf-8", "replace")).get("key", [""])[0]
        if not given or not self.auth.accepts(given):
            wait = self.auth.throttle.refused(peer)
            log.warning("dashboard: refused a login with a wrong key from %s (its next try waits %.1f s)", peer, wait)
            return await self._login_form(_LOGIN_ERROR_MARK, 401, KeyBackOff(wait).headers if wait else {})
        self.auth.throttle.admitted(peer)
        log.info("dashboard: a browser logged in from %s", peer)
        response = _with_headers(RedirectResponse(BASE, status_code=303))
        self._set_cookie(request, response, self.logins.open())
        return response

    async def _login_form(self, mark: bytes, status: int, headers: Mapping[str, str]) -> Response:
        """The login form with the line ``mark`` opens shown, answered with ``status``."""
        form = (await self.assets.get("login.html")).replace(mark, mark.replace(b" hidden", b""))
        return _with_headers(Response(form, status_code=status, headers=headers, media_type=_ASSETS["login.html"]))

    async def logout(self, request: Request, login: Login | None) -> Response:
        self.logins.close(request.cookies.get(COOKIE_NAME))
        response = JSONResponse({"ok": True})
        response.delete_cookie(COOKIE_NAME, path=BASE)
        return response

    async def static(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in _ASSETS or name.endswith(".html"):
            return _with_headers(error_response(NotFound(f"no file {name!r}")))
        return await self._asset(name)

    async def _asset(self, name: str) -> Response:
        return _with_headers(Response(await self.assets.get(name), media_type=_ASSETS[name]))

    def _set_cookie(self, request: Request, response: Response, token: str) -> None:
        response.set_cookie(
            COOKIE_NAME, token, max_age=int(LOGIN_SECONDS), path=BASE, httponly=True, samesite="strict",
            secure=request.url.scheme == "https",
        )

    # -- the data -----------------------------------------------------------------------------

    async def state(self, request: Request, login: Login | None) -> Response:
        return JSONResponse({**await self.desk.state(), "csrf": login.csrf if login is not None else None})

    async def live(self, request: Request, login: Login | None) -> HeldStream:
        return await self._stream(lambda emit: stream_state(self.pictures, emit))

    async def sessions(self, request: Request, login: Login | None) -> Response:
        return JSONResponse({"sessions": await self.desk.sessions(request.query_params.get("q", ""))})

    async def transcript(self, request: Request, login: Login | None) -> Response:
        return JSONResponse(await self.desk.transcript(request.path_params["session_id"]))

    async def events(self, request: Request, login: Login | None) -> HeldStream:
        # A browser reconnecting on its own names the last event it got: it resumes there, repeating nothing.
        raw = request.headers.get("last-event-id")
        if raw is not None and not raw.strip().isdigit():
            raise BadRequest("Last-Event-ID must be an event sequence number")
        since = int(raw) if raw is not None else None
        feed = await self.desk.subscribe(request.path_params["session_id"], since)
        try:
            return await self._stream(lambda emit: relay_session(feed, emit))
        except BaseException:
            feed.close()
            raise

    async def _stream(self, producer: Callable[[Emit], Awaitable[None]]) -> HeldStream:
        self.desk.streams.take()
        return HeldStream(self.desk.streams, SseResponse(producer, headers=_STREAM_HEADERS))

    # -- actions ------------------------------------------------------------------------------

    async def _fields(self, request: Request, *names: str) -> dict[str, str]:
        """The body's string fields ``names`` (each required, not blank).

        Raises:
            BadRequest: not a JSON object, or a field missing, blank or not a string.
        """
        body = await read_json(request, self.limit)
        if not isinstance(body, dict):
            raise BadRequest("the request body must be a JSON object")
        for name in names:
            value = body.get(name)
            if not isinstance(value, str) or not value.strip():
                raise BadRequest(f"{name!r} must be a non-empty string", param=name)
        return {name: body[name] for name in names}

    async def create(self, request: Request, login: Login | None) -> Response:
        return JSONResponse({"session_id": await self.desk.create()})

    async def chat(self, request: Request, login: Login | None) -> Response:
        fields = await self._fields(request, "text")
        return JSONResponse({"said": await self.desk.chat(request.path_params["session_id"], fields["text"])})

    async def interrupt(self, request: Request, login: Login | None) -> Response:
        return JSONResponse({"said": await self.desk.interrupt(request.path_params["session_id"])})

    async def steer(self, request: Request, login: Login | None) -> Response:
        fields = await self._fields(request, "path", "text")
        return JSONResponse({"said": await self.desk.steer(fields["path"], fields["text"])})

    async def answer(self, request: Request, login: Login | None) -> Response:
        # An answer may be blank (a clarify question's free text); only the id must say something.
        body = await read_json(request, self.limit)
        if not isinstance(body, dict) or not isinstance(body.get("pending_id"), str) or not isinstance(body.get("answer"), str):
            raise BadRequest('the body must be {"pending_id": string, "answer": string}')
        said = await self.desk.answer(request.path_params["session_id"], body["pending_id"], body["answer"])
        return JSONResponse({"said": said})


def _peer(request: Request) -> str:
    return request.client.host if request.client is not None else "?"


def _same_origin(request: Request) -> bool:
    """False when the browser says the request comes from another origin (no ``Origin``: not a browser's cross-site POST)."""
    origin = request.headers.get("origin")
    if origin is None:
        return True
    return urlsplit(origin).netloc == request.headers.get("host", "")


def dashboard_routes(desk: DashboardDesk, auth: Authenticator, limit: int) -> list[Route]:
    """The dashboard's routes; ``limit`` caps a JSON body (the API's ``max_body_bytes``)."""
    d = _Dashboard(desk, auth, limit)
    g = d.guarded
    api = f"{BASE}/api"
    return [
        Route(BASE, d.page, methods=["GET"]),
        Route(f"{BASE}/login", d.login_form, methods=["GET"]),
        Route(f"{BASE}/login", d.login, methods=["POST"]),
        Route(f"{BASE}/logout", g(d.logout, post=True), methods=["POST"]),
        Route(f"{BASE}/static/{{name}}", d.static, methods=["GET"]),
        Route(f"{api}/state", g(d.state), methods=["GET"]),
        Route(f"{api}/live", g(d.live), methods=["GET"]),
        Route(f"{api}/sessions", g(d.sessions), methods=["GET"]),
        Route(f"{api}/sessions", g(d.create, post=True), methods=["POST"]),
        Route(f"{api}/sessions/{{session_id}}", g(d.transcript), methods=["GET"]),
        Route(f"{api}/sessions/{{session_id}}/events", g(d.events), methods=["GET"]),
        Route(f"{api}/sessions/{{session_id}}/interrupt", g(d.interrupt, post=True), methods=["POST"]),
        Route(f"{api}/sessions/{{session_id}}/answer", g(d.answer, post=True), methods=["POST"]),
        Route(f"{api}/sessions/{{session_id}}/messages", g(d.chat, post=True), methods=["POST"]),
        Route(f"{api}/steer", g(d.steer, post=True), methods=["POST"]),
    ]
