"""Telegram's Bot API over ``httpx2``: one method call, its result or a named error.

Telegram's own Python libraries are asyncio-only, so the documented HTTP API is spoken directly. The
token is part of every URL (``/bot<TOKEN>/<method>``): it never reaches a log line or an error text,
which name the method only.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import httpx2
import trio

from actors.platform.gateway.adapter import TokenRefused
from actors.platform.gateway.fetch import download_to
from actors.platform.outbound import DeliveryFailed

__all__ = ["BotApi", "TelegramError", "TelegramUnauthorized"]

log = logging.getLogger("hermes_actors.telegram")

#: Attempts of one call that Telegram asks to retry later (429 with ``retry_after``).
MAX_RATE_LIMIT_WAITS = 5


class TelegramError(DeliveryFailed):
    """A Bot API call failed: Telegram's description (never the token), and its ``retry_after`` if any."""

    def __init__(self, method: str, description: str, retry_after: float | None = None) -> None:
        super().__init__(f"telegram {method}: {description}")
        self.retry_after = retry_after


class TelegramUnauthorized(TelegramError, TokenRefused):
    """The token was refused (401/404): retrying will not help until it is fixed."""


class BotApi:
    """Calls of one bot.

    Args:
        base_url: ``https://api.telegram.org`` (a fake server's address in tests).
        token: the bot's token.
        client: the HTTP client (the caller closes it).
    """

    def __init__(self, base_url: str, token: str, client: httpx2.AsyncClient) -> None:
        self._root = f"{base_url.rstrip('/')}/bot{token}"
        self._files = f"{base_url.rstrip('/')}/file/bot{token}"
        self._client = client

    async def call(self, method: str, *, http_timeout: float = 30.0, **params: Any) -> Any:
        """Call ``method`` with ``params`` (JSON); its ``result``. A 429 is waited out, up to a bound.

        ``http_timeout`` bounds the HTTP exchange (a long poll's must exceed its own ``timeout``).

        Raises:
            TelegramUnauthorized: a refused token. TelegramError: any other failure.
        """
        body = {name: value for name, value in params.items() if value is not None}
        return await self._call(method, http_timeout, json=body)

    async def upload(self, method: str, field: str, path: Path, **params: Any) -> Any:
        """Call ``method`` with the file at ``path`` as the multipart field ``field`` (``sendPhoto``'s
        ``photo``, ``sendDocument``'s ``document``); its ``result``."""
        data = {name: str(value) for name, value in params.items() if value is not None}
        content = await trio.to_thread.run_sync(path.read_bytes)
        return await self._call(method, 120.0, data=data, files={field: (path.name, content)})

    async def download(self, file_id: str, destination: Path, limit: int) -> int:
        """Fetch a user's file (``getFile``, then its path) into ``destination``; its size.

        Raises:
            TelegramError: Telegram refused. DownloadFailed: not fetched, or over ``limit`` bytes.
        """
        found = await self.call("getFile", file_id=file_id)
        file_path = found.get("file_path") if isinstance(found, dict) else None
        if not isinstance(file_path, str) or ".." in file_path.split("/"):
            raise TelegramError("getFile", "no file path in the answer")
        return await download_to(self._client, f"{self._files}/{file_path}", destination, limit)

    async def _call(self, method: str, http_timeout: float, **request: Any) -> Any:
        for _ in range(MAX_RATE_LIMIT_WAITS):
            try:
                response = await self._client.post(f"{self._root}/{method}", timeout=http_timeout, **request)
                reply = response.json()
            except (httpx2.HTTPError, ValueError) as exc:
                # The exception's text may hold the URL, and so the token: name its kind only.
                raise TelegramError(method, f"no answer ({type(exc).__name__})") from None
            if reply.get("ok"):
                return reply.get("result")
            description = str(reply.get("description") or f"HTTP {response.status_code}")
            if response.status_code in (401, 404):
                raise TelegramUnauthorized(method, description)
            retry_after = (reply.get("parameters") or {}).get("retry_after")
            if response.status_code != 429 or not isinstance(retry_after, (int, float)):
                raise TelegramError(method, description, retry_after)
            log.warning("telegram %s: rate limited, waiting %s s as asked", method, retry_after)
            await trio.sleep(float(retry_after))
        raise TelegramError(method, "still rate limited after waiting as asked")
