"""Meta's Graph API over ``httpx2``, for one WhatsApp business number: a request, its JSON answer or a
named error, and rate limits waited out (a send that surely never reached Graph is made again by the
adapters' shared transport, :mod:`actors.platform.gateway.transport`).

Every request carries ``Authorization: Bearer <token>`` (never in an address, a log line or an error
text). An error answer is ``{"error": {"message", "type", "code", "error_subcode", "fbtrace_id"}}``, and
its ``code`` says what happened:

- ``190``: the access token expired or was revoked (:class:`GraphTokenRefused`; trying again will not mend it).
- ``131047``: the user last wrote more than 24 hours ago, so only a template may be sent
  (:class:`WindowClosed`).
- ``4``, ``80007``, ``130429``, ``131056`` or HTTP 429: a rate limit (the app's, the business account's, the
  number's throughput, or one user's pair rate). Graph rarely says how long to wait: ``Retry-After`` when
  it does, else a pause that doubles while the limits last; every request waits (the limits count per
  number), then it is made again.
"""

from __future__ import annotations

import logging
import re
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

__all__ = [
    "RATE_LIMIT_CODES", "TOKEN_CODE", "WINDOW_CODE", "GraphClient", "GraphError", "GraphTokenRefused", "WindowClosed",
]

log = logging.getLogger("hermes_actors.whatsapp")

#: The code of an expired, revoked or invalid access token.
TOKEN_CODE = 190
#: The code of a free-form message refused outside the 24-hour customer-service window.
WINDOW_CODE = 131047
#: The codes of Graph's rate limits (app calls, business account calls, throughput, one user's pair rate).
RATE_LIMIT_CODES = frozenset({4, 80007, 130429, 131056})
#: Times one request is made while Graph says to slow down.
MAX_ATTEMPTS = 5
_MEDIA_ID = re.compile(r"[A-Za-z0-9._-]{1,128}")


class GraphError(DeliveryFailed):
    """A request failed: Graph's error code and message, or what went wrong on the way (never the token).

    Attributes:
        code: Graph's error code, when it answered with one.
    """

    def __init__(self, what: str, error: str, code: int | None = None) -> None:
        super().__init__(f"whatsapp {what}: {error}")
        self.error = error
        self.code = code


class GraphTokenRefused(GraphError, TokenRefused):
    """Graph refused the access token (code 190: expired or revoked)."""


class WindowClosed(GraphError):
    """A free-form message refused because the user last wrote more than 24 hours ago (code 131047)."""


class GraphClient:
    """Requests of one business number.

    Args:
        graph_url: the Graph API's address (a fake server's in tests).
        version: the API version (``v20.0``).
        token: the access token.
        client: the HTTP client (the caller closes it).
        retry_first: the first pause after a rate limit that names no wait (each doubling).
        clock: Trio's clock, so tests can move it.

    Attributes:
        pause: the rate limits' pause, shared by every request.
    """

    def __init__(
        self, graph_url: str, version: str, token: str, client: httpx2.AsyncClient, *,
        retry_first: float = 1.0, clock: Callable[[], float] = trio.current_time,
    ) -> None:
        self.root = f"{graph_url.rstrip('/')}/{version}"
        self._headers = {"Authorization": f"Bearer {token}"}
        self._client = client
        self._retry_first = retry_first
        self.pause = RatePause(clock)
        self._next_pause = retry_first

    async def request(
        self, method: str, path: str, body: Mapping[str, Any] | None = None, *, files: Mapping[str, Any] | None = None,
        data: Mapping[str, str] | None = None, what: str = "",
    ) -> Any:
        """``method`` on ``path`` (under the version); the answer's JSON.

        Raises:
            GraphTokenRefused: code 190. WindowClosed: code 131047. GraphError: any other failure.
        """
        what = what or path.rsplit("/", 1)[-1]
        limited = 0
        while True:
            await self.pause.wait()
            try:
                response = await self._client.request(
                    method, f"{self.root}/{path}", json=dict(body) if body is not None else None, files=files, data=data,
                    headers=self._headers, timeout=300.0 if files else 60.0,
                )
            except httpx2.TransportError as exc:
                raise GraphError(what, f"no answer ({type(exc).__name__})") from None
            try:
                reply = response.json()
            except ValueError:
                reply = None
            if response.status_code < 300:
                self._next_pause = self._retry_first
                return reply
            error = reply.get("error") if isinstance(reply, dict) else None
            error = error if isinstance(error, dict) else {}
            code = error.get("code") if isinstance(error.get("code"), int) else None
            if response.status_code == 429 or code in RATE_LIMIT_CODES:
                limited += 1
                if limited >= MAX_ATTEMPTS:
                    raise GraphError(what, f"still rate limited (code {code}) after waiting {MAX_ATTEMPTS} times", code)
                self._limited(what, code, response.headers.get("retry-after"))
                continue
            message = str(error.get("message") or "")[:300]
            text = f"HTTP {response.status_code}" + (f" graph error {code}" if code is not None else "") + (f": {message}" if message else "")
            if code == TOKEN_CODE or (response.status_code == 401 and code is None):
                raise GraphTokenRefused(what, text + " (the access token expired or was revoked)", code)
            if code == WINDOW_CODE:
                raise WindowClosed(what, text + " (outside the 24-hour customer-service window)", code)
            raise GraphError(what, text, code)

    async def download(self, media_id: str, destination: Path, limit: int) -> tuple[int, str]:
        """Fetch a user's media into ``destination``: its address from ``GET /{media_id}``, then its bytes
        (the address needs the token too); its size and MIME type.

        Raises:
            DownloadFailed: not a media id, not fetched, or over ``limit`` bytes.
        """
        if not _MEDIA_ID.fullmatch(media_id):
            raise DownloadFailed("download: not a WhatsApp media id")
        try:
            found = await self.request("GET", media_id, what="media")
        except GraphError as exc:
            raise DownloadFailed(f"download: {exc.error}") from None
        url = found.get("url") if isinstance(found, dict) else None
        if not isinstance(url, str) or not url.startswith(("https://", "http://")):
            raise DownloadFailed("download: no address in Graph's answer")
        async with platform_client(headers=self._headers) as authorised:
            size = await download_to(authorised, url, destination, limit)
        return size, str(found.get("mime_type") or "")

    def _limited(self, what: str, code: int | None, header: str | None) -> None:
        delay = header_seconds(header, self._next_pause)
        if header is None:
            self._next_pause = min(self._next_pause * 2, 60.0)
        log.warning("whatsapp %s: rate limited (code %s), waiting %.3f s", what, code if code is not None else "HTTP 429", delay)
        self.pause.close_for(delay)
