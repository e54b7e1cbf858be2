"""Slack's Web API over ``httpx2``: one call, Slack's answer or a named error, its rate limits honoured.

slack_sdk's async client is asyncio-only, so the documented HTTP API is spoken directly. Every method is
a POST with ``Authorization: Bearer <token>`` (the bot token, or the app-level token for
``apps.connections.open``); Slack answers ``{"ok": true, ...}`` or ``{"ok": false, "error": "..."}``. A
``429`` says in ``Retry-After`` how long the method is closed: every call of that method waits that long
(Slack counts its rate tiers per method and workspace) and tries again. A refused token
(``invalid_auth``, ``token_revoked`` ...) is :class:`SlackTokenRefused`: trying again will not help.
Tokens are sent in a header and never reach a log line or an error text.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2
import trio

from actors.platform.gateway.adapter import TokenRefused
from actors.platform.gateway.fetch import DownloadFailed, download_to
from actors.platform.gateway.transport import platform_client
from actors.platform.outbound import DeliveryFailed

__all__ = ["FILES_ORIGIN", "SlackError", "SlackTokenRefused", "SlackWeb"]

log = logging.getLogger("hermes_actors.slack")

#: Where Slack serves a user's files (``url_private_download``): the bot token goes only there.
FILES_ORIGIN = "https://files.slack.com"
#: Attempts of one call that Slack asks to retry later (429).
MAX_RATE_LIMIT_WAITS = 5
#: Slack's errors that mean the token itself is refused.
TOKEN_ERRORS = frozenset({"invalid_auth", "not_authed", "token_revoked", "token_expired", "account_inactive", "not_allowed_token_type"})
#: Methods that take a JSON body (nested values: blocks); the others are sent as a form, which every
#: method accepts.
JSON_METHODS = frozenset({"chat.postMessage", "chat.update", "chat.postEphemeral"})


class SlackError(DeliveryFailed):
    """A Web API call failed: Slack's error code (never a token)."""

    def __init__(self, method: str, error: str) -> None:
        super().__init__(f"slack {method}: {error}")
        self.error = error


class SlackTokenRefused(SlackError, TokenRefused):
    """Slack refused the token (``invalid_auth``, ``token_revoked`` ...)."""


class SlackWeb:
    """Calls of one app.

    Args:
        api_url: ``https://slack.com/api`` (a fake server's address in tests).
        bot_token: the bot token (``xoxb-``).
        app_token: the app-level token (``xapp-``), for Socket Mode.
        client: the HTTP client (the caller closes it).
        clock: Trio's clock, so tests can move it.
    """

    def __init__(
        self, api_url: str, bot_token: str, app_token: str, client: httpx2.AsyncClient,
        clock: Callable[[], float] = trio.current_time,
    ) -> None:
        self._root = api_url.rstrip("/")
        self._tokens = {"bot": bot_token, "app": app_token}
        self._client = client
        self._clock = clock
        self._closed_until: dict[str, float] = {}
        self._file_origins = frozenset({_origin(self._root), FILES_ORIGIN})
        self.waited = 0.0
        self.rate_limited = 0

    async def call(self, method: str, args: Mapping[str, Any] | None = None, *, token: str = "bot") -> dict[str, Any]:
        """Call ``method`` with ``args``; Slack's answer (``ok`` true).

        Raises:
            SlackTokenRefused: the token was refused. SlackError: any other failure (Slack's error code).
        """
        headers = {"Authorization": f"Bearer {self._tokens[token]}"}
        body: dict[str, Any]
        if method in JSON_METHODS:
            body = {"json": dict(args or {})}
        else:
            body = {"data": {k: v if isinstance(v, str) else json.dumps(v) for k, v in (args or {}).items()}}
        for _ in range(MAX_RATE_LIMIT_WAITS):
            await self._wait(method)
            try:
                response = await self._client.post(f"{self._root}/{method}", headers=headers, timeout=60.0, **body)
            except httpx2.HTTPError as exc:
                raise SlackError(method, f"no answer ({type(exc).__name__})") from None
            if response.status_code == 429:
                self._limited(method, response.headers.get("retry-after"))
                continue
            try:
                reply = response.json()
            except ValueError:
                raise SlackError(method, f"HTTP {response.status_code}, not JSON") from None
            if not isinstance(reply, dict):
                raise SlackError(method, f"HTTP {response.status_code}, not an object")
            if reply.get("ok") is True:
                return reply
            error = str(reply.get("error") or f"HTTP {response.status_code}")
            if error == "ratelimited":
                self._limited(method, response.headers.get("retry-after"))
                continue
            if error in TOKEN_ERRORS:
                raise SlackTokenRefused(method, error)
            raise SlackError(method, error)
        raise SlackError(method, "still rate limited after waiting as asked")

    async def upload(self, url: str, path: Path) -> None:
        """Send a file's bytes to the address ``files.getUploadURLExternal`` gave (no token: the address
        is the permission).

        Raises:
            SlackError: not taken.
        """
        data = await trio.to_thread.run_sync(path.read_bytes)
        try:
            response = await self._client.post(url, content=data, headers={"Content-Type": "application/octet-stream"}, timeout=300.0)
        except httpx2.HTTPError as exc:
            raise SlackError("upload", f"no answer ({type(exc).__name__})") from None
        if response.status_code != 200:
            raise SlackError("upload", f"HTTP {response.status_code}")

    async def download(self, url: str, destination: Path, limit: int) -> int:
        """Fetch a user's file (``url_private_download``) into ``destination``; its size. The bot token
        goes with it, so only Slack's own addresses are fetched.

        Raises:
            DownloadFailed: not Slack's address, not fetched, or over ``limit`` bytes.
        """
        if _origin(url) not in self._file_origins:
            raise DownloadFailed("download: not an address of Slack's files")
        authorised = platform_client(headers={"Authorization": f"Bearer {self._tokens['bot']}"})
        async with authorised:
            return await download_to(authorised, url, destination, limit)

    async def _wait(self, method: str) -> None:
        while (delay := self._closed_until.get(method, 0.0) - self._clock()) > 0:
            self.waited += delay
            await trio.sleep(delay)

    def _limited(self, method: str, retry_after: str | None) -> None:
        try:
            delay = max(0.0, float(retry_after)) if retry_after is not None else 1.0
        except ValueError:
            delay = 1.0
        self.rate_limited += 1
        log.warning("slack %s: rate limited, waiting %s s as asked", method, delay)
        self._closed_until[method] = max(self._closed_until.get(method, 0.0), self._clock() + delay)


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()
