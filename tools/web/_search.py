"""Search backends: SearXNG's JSON API (self-hostable) and the Brave Search API (hosted)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Protocol

import attrs
import httpx2

from config.terminal import WebConfig
from tools.redact import redact_secrets
from tools.web.errors import SearchError

__all__ = ["BraveBackend", "SearchBackend", "SearchHit", "SearxngBackend", "select_backend"]

log = logging.getLogger(__name__)


@attrs.frozen
class SearchHit:
    """One search result."""

    title: str
    url: str
    description: str

    def to_dict(self, position: int) -> dict[str, Any]:
        """The JSON form, numbered from 1."""
        return {"position": position, "title": self.title, "url": self.url, "description": self.description}


class SearchBackend(Protocol):
    """A web search service."""

    name: str

    async def search(self, query: str, limit: int) -> list[SearchHit]:
        """Up to ``limit`` results for ``query``.

        Raises:
            SearchError: the service failed or answered nonsense.
        """
        ...


async def _get_json(client: httpx2.AsyncClient, backend: str, url: str, **options: Any) -> Any:
    try:
        response = await client.get(url, **options)
    except httpx2.TimeoutException as exc:
        raise SearchError(f"The {backend} search timed out; try again or simplify the query.") from exc
    except httpx2.HTTPError as exc:
        raise SearchError(f"The {backend} search service could not be reached ({type(exc).__name__}).") from exc
    if response.status_code >= 400:
        log.warning("%s search returned HTTP %d for %s", backend, response.status_code, redact_secrets(url))
        raise SearchError(f"The {backend} search service answered HTTP {response.status_code}.")
    try:
        return response.json()
    except ValueError as exc:
        raise SearchError(f"The {backend} search service returned something that is not JSON.") from exc


def _text(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""


@attrs.define
class SearxngBackend:
    """SearXNG's ``/search?format=json`` API (the instance must enable the json format)."""

    client: httpx2.AsyncClient
    base_url: str
    name: str = "searxng"

    async def search(self, query: str, limit: int) -> list[SearchHit]:
        """Query the instance; see ``SearchBackend.search``."""
        url = self.base_url.rstrip("/") + "/search"
        body = await _get_json(self.client, self.name, url, params={"q": query, "format": "json"})
        results = body.get("results") if isinstance(body, dict) else None
        if not isinstance(results, list):
            raise SearchError("The searxng answer had no 'results' list.")
        hits = [
            SearchHit(title=_text(item.get("title")), url=_text(item.get("url")), description=_text(item.get("content")))
            for item in results
            if isinstance(item, dict) and _text(item.get("url"))
        ]
        return hits[:limit]


@attrs.define
class BraveBackend:
    """The Brave Search web API (key in the ``X-Subscription-Token`` header)."""

    client: httpx2.AsyncClient
    base_url: str
    api_key: str = attrs.field(repr=False)
    name: str = "brave"

    async def search(self, query: str, limit: int) -> list[SearchHit]:
        """Query Brave; see ``SearchBackend.search``."""
        body = await _get_json(
            self.client,
            self.name,
            self.base_url,
            params={"q": query, "count": min(limit, 20)},
            headers={"X-Subscription-Token": self.api_key, "Accept": "application/json"},
        )
        web = body.get("web") if isinstance(body, dict) else None
        results = web.get("results") if isinstance(web, dict) else None
        if not isinstance(results, list):
            return []
        hits = [
            SearchHit(
                title=_text(item.get("title")), url=_text(item.get("url")), description=_text(item.get("description"))
            )
            for item in results
            if isinstance(item, dict) and _text(item.get("url"))
        ]
        return hits[:limit]


def select_backend(config: WebConfig, environ: Mapping[str, str], client: httpx2.AsyncClient) -> SearchBackend | None:
    """The backend ``config`` and the environment's keys call for; None when nothing is configured."""
    if config.backend == "none":
        return None
    key = environ.get(config.brave_api_key_env, "")
    if config.backend in ("auto", "searxng") and config.searxng_url:
        return SearxngBackend(client, config.searxng_url)
    if config.backend in ("auto", "brave") and key:
        return BraveBackend(client, config.brave_base_url, key)
    return None
