"""The Matrix client-server API over ``httpx2``: one request, the homeserver's answer or a named error,
its rate limits waited out.

Every request carries ``Authorization: Bearer <access token>`` (never in a URL, a log line or an error
text). An error answer is ``{"errcode": "M_...", "error": "..."}``: ``429 M_LIMIT_EXCEEDED`` says in
``retry_after_ms`` (or ``Retry-After``) how long to wait, and the request is made again after it;
``M_UNKNOWN_TOKEN`` (and ``M_MISSING_TOKEN``) is :class:`MatrixTokenRefused`, which trying again will not
mend. Sends are ``PUT``s with a transaction id chosen once per message, so a send tried again after a
lost answer or a server error is the same event to the homeserver, never a second one.
"""

from __future__ import annotations

import itertools
import logging
import secrets
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx2
import trio

from actors.platform.gateway.adapter import TokenRefused
from actors.platform.gateway.fetch import DownloadFailed, download_to
from actors.platform.gateway.pause import RatePause, header_seconds
from actors.platform.gateway.transport import IDEMPOTENT_METHODS, platform_client
from actors.platform.outbound import DeliveryFailed

__all__ = ["MatrixClient", "MatrixError", "MatrixTokenRefused"]

log = logging.getLogger("hermes_actors.matrix")

CLIENT = "/_matrix/client/v3"
#: Times one request is made when the homeserver asks to wait (429), fails (5xx) or is slow to answer a
#: GET or a PUT (a dropped connection is the shared transport's, :mod:`actors.platform.gateway.transport`).
MAX_ATTEMPTS = 5
#: The wait after a 429 that names none, in seconds.
DEFAULT_RETRY = 1.0
TOKEN_ERRORS = frozenset({"M_UNKNOWN_TOKEN", "M_MISSING_TOKEN"})


class MatrixError(DeliveryFailed):
    """A request failed: the homeserver's error code, or what went wrong on the way (never the token)."""

    def __init__(self, what: str, error: str) -> None:
        super().__init__(f"matrix {what}: {error}")
        self.error = error


class MatrixTokenRefused(MatrixError, TokenRefused):
    """The homeserver refused the access token (``M_UNKNOWN_TOKEN``: revoked, or logged out)."""


class MatrixClient:
    """Requests of one bot.

    Args:
        homeserver: the homeserver's address (a fake server's in tests).
        token: the access token.
        client: the HTTP client (the caller closes it).
        clock: Trio's clock, so tests can move it.
    """

    def __init__(self, homeserver: str, token: str, client: httpx2.AsyncClient, clock: Callable[[], float] = trio.current_time) -> None:
        self._root = homeserver.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}"}
        self._client = client
        self._txn = (f"hermes-{secrets.token_hex(4)}-{n}" for n in itertools.count(1))
        self.pause = RatePause(clock)
        self.retried = 0

    def new_txn(self) -> str:
        """A transaction id unique to this run (a send made again reuses its own)."""
        return next(self._txn)

    async def request(
        self, method: str, path: str, body: Mapping[str, Any] | None = None, *, params: Mapping[str, str] | None = None,
        timeout: float = 60.0, what: str = "",
    ) -> dict[str, Any]:
        """``method`` on ``path`` (under ``/_matrix/client/v3``); the answer's object.

        Raises:
            MatrixTokenRefused: the token was refused. MatrixError: any other failure.
        """
        what = what or path.split("/")[1]
        failure = "no answer"
        for attempt in range(MAX_ATTEMPTS):
            self.retried += attempt > 0
            await self.pause.wait()
            try:
                response = await self._client.request(
                    method, f"{self._root}{CLIENT}{path}", json=dict(body) if body is not None else None,
                    params=params, headers=self._headers, timeout=timeout,
                )
            except httpx2.HTTPError as exc:
                failure = f"no answer ({type(exc).__name__})"
                if isinstance(exc, httpx2.ReadTimeout) and method in IDEMPOTENT_METHODS:
                    continue  # a slow answer, which the shared transport never repeats; a PUT keeps its txn id
                # Anything else the shared transport already made again if it surely never reached the
                # homeserver, or if it is idempotent; a POST it may have read is not made twice.
                raise MatrixError(what, failure) from None
            try:
                reply = response.json()
            except ValueError:
                reply = None
            reply = reply if isinstance(reply, dict) else {}
            if response.status_code == 200:
                return reply
            errcode = str(reply.get("errcode") or f"HTTP {response.status_code}")
            if response.status_code == 429 or errcode == "M_LIMIT_EXCEEDED":
                self._limited(what, reply.get("retry_after_ms"), response.headers.get("retry-after"))
                continue
            if errcode in TOKEN_ERRORS:
                raise MatrixTokenRefused(what, errcode)
            if response.status_code >= 500:
                failure = errcode
                continue
            raise MatrixError(what, f"{errcode}: {str(reply.get('error') or '')[:200]}".rstrip(": "))
        raise MatrixError(what, f"{failure}, {MAX_ATTEMPTS} times")

    async def send(self, room: str, event_type: str, content: Mapping[str, Any], txn: str | None = None) -> str:
        """Send an event to ``room`` under ``txn`` (a fresh transaction id unless given); its event id.

        Raises:
            MatrixError: not sent.
        """
        path = f"/rooms/{quote(room, safe='')}/send/{quote(event_type, safe='')}/{txn or self.new_txn()}"
        event_id = (await self.request("PUT", path, content, what="send")).get("event_id")
        if not isinstance(event_id, str):
            raise MatrixError("send", "no event id in the answer")
        return event_id

    async def upload(self, path: Path, content_type: str) -> str:
        """Upload a file to the content repository; its ``mxc://`` address.

        Raises:
            MatrixError: not taken.
        """
        data = await trio.to_thread.run_sync(path.read_bytes)
        headers = {**self._headers, "Content-Type": content_type}
        try:
            response = await self._client.post(f"{self._root}/_matrix/media/v3/upload", content=data, headers=headers,
                                               params={"filename": path.name}, timeout=300.0)
        except httpx2.HTTPError as exc:
            raise MatrixError("upload", f"no answer ({type(exc).__name__})") from None
        uri = response.json().get("content_uri") if response.status_code == 200 else None
        if not isinstance(uri, str):
            raise MatrixError("upload", f"HTTP {response.status_code}")
        return uri

    async def download(self, mxc: str, destination: Path, limit: int) -> int:
        """Fetch a user's file (``mxc://server/id``) through the authenticated media API; its size.

        Raises:
            DownloadFailed: not an ``mxc://`` address, not fetched, or over ``limit`` bytes.
        """
        server, _, media = mxc.removeprefix("mxc://").partition("/")
        if not mxc.startswith("mxc://") or not server or not media or "/" in media:
            raise DownloadFailed("download: not a Matrix content address")
        authorised = platform_client(headers=self._headers)
        async with authorised:
            url = f"{self._root}/_matrix/client/v1/media/download/{quote(server, safe='')}/{quote(media, safe='')}"
            return await download_to(authorised, url, destination, limit)

    def _limited(self, what: str, retry_after_ms: object, retry_after: str | None) -> None:
        if isinstance(retry_after_ms, int | float) and not isinstance(retry_after_ms, bool):
            delay = max(0.0, float(retry_after_ms) / 1000)
        else:
            delay = header_seconds(retry_after, DEFAULT_RETRY)
        log.warning("matrix %s: rate limited (M_LIMIT_EXCEEDED), waiting %.3f s as asked", what, delay)
        self.pause.close_for(delay)
