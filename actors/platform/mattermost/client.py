"""Mattermost's REST API v4 over ``httpx2``: one request, the server's answer or a named error, its rate
limits waited out.

Every request carries ``Authorization: Bearer <token>`` (never in a URL, a log line or an error text).
An error answer is ``{"id": "...", "message": "...", "status_code": N}``. A ``429`` says how long to wait
in ``Retry-After`` or ``X-Ratelimit-Reset`` (seconds until the server's bucket refills): every request
waits that long (the server counts per token) and the request is made again. A ``401`` is
:class:`MattermostTokenRefused`: the token was revoked or never valid, and trying again will not mend it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import httpx2
import trio

from actors.platform.gateway.adapter import TokenRefused
from actors.platform.gateway.fetch import DownloadFailed, download_to
from actors.platform.gateway.pause import RatePause, header_seconds
from actors.platform.gateway.transport import platform_client
from actors.platform.outbound import DeliveryFailed

__all__ = ["API", "MattermostClient", "MattermostError", "MattermostTokenRefused"]

log = logging.getLogger("hermes_actors.mattermost")

API = "/api/v4"
#: Times one request is made when the server asks to wait (429).
MAX_ATTEMPTS = 5
#: The wait after a 429 that names none, in seconds.
DEFAULT_RETRY = 1.0


class MattermostError(DeliveryFailed):
    """A request failed: the server's error id, or what went wrong on the way (never the token)."""

    def __init__(self, what: str, error: str) -> None:
        super().__init__(f"mattermost {what}: {error}")
        self.error = error


class MattermostTokenRefused(MattermostError, TokenRefused):
    """The server refused the token (401: revoked, or the bot account disabled)."""


class MattermostClient:
    """Requests of one bot.

    Args:
        url: the server's address (a fake server's in tests).
        token: the bot's access token.
        client: the HTTP client (the caller closes it).
        clock: Trio's clock, so tests can move it.
    """

    def __init__(self, url: str, token: str, client: httpx2.AsyncClient, clock: Callable[[], float] = trio.current_time) -> None:
        self.root = url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}"}
        self._client = client
        self.pause = RatePause(clock)

    async def request(
        self, method: str, path: str, body: Mapping[str, Any] | None = None, *, files: Mapping[str, Any] | None = None,
        data: Mapping[str, str] | None = None, what: str = "",
    ) -> Any:
        """``method`` on ``path`` (under ``/api/v4``); the answer's JSON.

        Raises:
            MattermostTokenRefused: the token was refused. MattermostError: any other failure.
        """
        what = what or path.split("/")[1]
        for _ in range(MAX_ATTEMPTS):
            await self.pause.wait()
            try:
                response = await self._client.request(
                    method, f"{self.root}{API}{path}", json=dict(body) if body is not None else None,
                    files=files, data=data, headers=self._headers, timeout=300.0 if files else 60.0,
                )
            except httpx2.HTTPError as exc:
                raise MattermostError(what, f"no answer ({type(exc).__name__})") from None
            if response.status_code == 429:
                self._limited(what, response.headers.get("retry-after") or response.headers.get("x-ratelimit-reset"))
                continue
            try:
                reply = response.json()
            except ValueError:
                reply = None
            if response.status_code < 300:
                return reply
            error = reply.get("id") if isinstance(reply, dict) else None
            text = f"HTTP {response.status_code}" + (f" {error}" if isinstance(error, str) else "")
            if response.status_code == 401:
                raise MattermostTokenRefused(what, text)
            raise MattermostError(what, text)
        raise MattermostError(what, f"still rate limited after waiting as asked, {MAX_ATTEMPTS} times")

    async def download(self, file_id: str, destination: Path, limit: int) -> int:
        """Fetch a user's file (``GET /api/v4/files/{id}``) into ``destination``; its size.

        Raises:
            DownloadFailed: not a file id, not fetched, or over ``limit`` bytes.
        """
        if not file_id.isalnum():
            raise DownloadFailed("download: not a Mattermost file id")
        async with platform_client(headers=self._headers) as authorised:
            return await download_to(authorised, f"{self.root}{API}/files/{file_id}", destination, limit)

    def _limited(self, what: str, header: str | None) -> None:
        delay = header_seconds(header, DEFAULT_RETRY)
        log.warning("mattermost %s: rate limited (429), waiting %.3f s as asked", what, delay)
        self.pause.close_for(delay)
