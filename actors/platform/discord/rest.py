"""Discord's REST API over ``httpx2``, with its rate limits honoured.

discord.py is asyncio-only, so the documented HTTP API is spoken directly. Discord groups routes into
buckets and says, in each answer's headers, how many requests a bucket has left and when it refills
(``X-RateLimit-Bucket``, ``-Remaining``, ``-Reset-After``): a request waits for its bucket rather than
earn a 429. A 429 that comes anyway is waited out as its ``retry_after`` says (for every route when it is
``global``). The token is sent in a header and never reaches a log line or an error text.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import httpx2
import trio

from actors.platform.gateway.fetch import DownloadFailed, download_to
from actors.platform.outbound import DeliveryFailed

__all__ = ["DiscordError", "DiscordRest", "DiscordUnauthorized", "RateLimits", "route_key"]

log = logging.getLogger("hermes_actors.discord")

#: Attempts of one request that Discord asks to retry later (429).
MAX_RATE_LIMIT_WAITS = 5
_MINOR_ID = re.compile(r"(?<=/)(\d{5,})(?=/|$)")


class DiscordError(DeliveryFailed):
    """A REST call failed: Discord's message (never the token), and the HTTP status."""

    def __init__(self, route: str, description: str, status: int | None = None) -> None:
        super().__init__(f"discord {route}: {description}")
        self.status = status


class DiscordUnauthorized(DiscordError):
    """The token was refused (401): retrying will not help until it is fixed."""


def route_key(method: str, path: str) -> str:
    """The route a bucket is learned for: the path with its ids replaced, except the major one
    (the channel, guild or webhook it starts with), as Discord counts them."""
    parts = path.strip("/").split("/")
    major = parts[:2]
    rest = _MINOR_ID.sub("{id}", "/" + "/".join(parts[2:])) if len(parts) > 2 else ""
    return f"{method} /{'/'.join(major)}{rest}"


@attrs.define
class _Bucket:
    remaining: int
    reset_at: float


class RateLimits:
    """What Discord said of its buckets; :meth:`wait` holds a request until its bucket has room.

    Args:
        clock: Trio's clock (``trio.current_time``), so tests can move it.
    """

    def __init__(self, clock: Callable[[], float] = trio.current_time) -> None:
        self.clock = clock
        self._bucket_of: dict[str, str] = {}
        self._buckets: dict[str, _Bucket] = {}
        self._global_until = 0.0
        self.waited = 0.0

    def delay(self, route: str) -> float:
        """Seconds a request on ``route`` must wait now."""
        now = self.clock()
        until = self._global_until
        bucket = self._buckets.get(self._bucket_of.get(route, ""))
        if bucket is not None and bucket.remaining <= 0:
            until = max(until, bucket.reset_at)
        return max(0.0, until - now)

    async def wait(self, route: str) -> None:
        """Sleep until a request on ``route`` may go (its bucket refilled, no global pause)."""
        while (delay := self.delay(route)) > 0:
            self.waited += delay
            await trio.sleep(delay)

    def learn(self, route: str, headers: httpx2.Headers) -> None:
        """Read a response's rate-limit headers; one request of the bucket is spent."""
        bucket_id = headers.get("x-ratelimit-bucket")
        remaining, reset_after = headers.get("x-ratelimit-remaining"), headers.get("x-ratelimit-reset-after")
        if bucket_id is None or remaining is None or reset_after is None:
            return
        try:
            self._bucket_of[route] = bucket_id
            self._buckets[bucket_id] = _Bucket(int(remaining), self.clock() + float(reset_after))
        except ValueError:
            log.debug("discord: unreadable rate-limit headers on %s", route)

    def limited(self, route: str, retry_after: float, is_global: bool) -> None:
        """A 429: no request on ``route`` (or on any, when global) before ``retry_after`` seconds."""
        until = self.clock() + retry_after
        if is_global:
            self._global_until = max(self._global_until, until)
            return
        bucket_id = self._bucket_of.setdefault(route, f"route:{route}")
        self._buckets[bucket_id] = _Bucket(0, until)


class DiscordRest:
    """Requests of one bot.

    Args:
        api_url: ``https://discord.com/api/v10`` (a fake server's address in tests).
        token: the bot's token.
        client: the HTTP client (the caller closes it).
        limits: the rate-limit book (one per bot).
    """

    def __init__(self, api_url: str, token: str, client: httpx2.AsyncClient, limits: RateLimits | None = None) -> None:
        self._root = api_url.rstrip("/")
        self._headers = {"Authorization": f"Bot {token}", "User-Agent": "DiscordBot (hermes-actors, 1)"}
        self._client = client
        self.limits = limits or RateLimits()

    async def request(self, method: str, path: str, *, body: Any = None, files: dict[str, Path] | None = None) -> Any:
        """``method`` on ``path`` (below the API's root) with a JSON ``body``, or multipart with
        ``files`` (``payload_json`` carrying the body); the answer's JSON, or None for 204.

        Raises:
            DiscordUnauthorized: a refused token. DiscordError: any other failure.
        """
        route = route_key(method, path)
        request: dict[str, Any] = {"json": body} if files is None else await _multipart(body, files)
        for _ in range(MAX_RATE_LIMIT_WAITS):
            await self.limits.wait(route)
            try:
                response = await self._client.request(method, self._root + path, headers=self._headers, timeout=60.0, **request)
            except httpx2.HTTPError as exc:
                raise DiscordError(route, f"no answer ({type(exc).__name__})") from None
            self.limits.learn(route, response.headers)
            if response.status_code == 204:
                return None
            try:
                reply = response.json()
            except ValueError:
                reply = {}
            if response.status_code < 300:
                return reply
            if response.status_code == 429 and isinstance(reply.get("retry_after"), (int, float)):
                log.warning("discord %s: rate limited, waiting %s s as asked", route, reply["retry_after"])
                self.limits.limited(route, float(reply["retry_after"]), bool(reply.get("global")))
                continue
            description = str(reply.get("message") or f"HTTP {response.status_code}")
            if response.status_code == 401:
                raise DiscordUnauthorized(route, description, 401)
            raise DiscordError(route, description, response.status_code)
        raise DiscordError(route, "still rate limited after waiting as asked", 429)

    async def download(self, url: str, destination: Path, limit: int) -> int:
        """Fetch an attachment's URL (Discord's CDN) into ``destination``; its size.

        Raises:
            DownloadFailed: not fetched, or over ``limit`` bytes (nothing is kept).
        """
        if not url.startswith(("https://", "http://")):
            raise DownloadFailed("download: not an http(s) address")
        return await download_to(self._client, url, destination, limit)


async def _multipart(body: Any, files: dict[str, Path]) -> dict[str, Any]:
    def read() -> dict[str, tuple[str, bytes]]:
        return {field: (path.name, path.read_bytes()) for field, path in files.items()}

    return {"data": {"payload_json": json.dumps(body or {})}, "files": await trio.to_thread.run_sync(read)}
