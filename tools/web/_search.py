"""Search backends: SearXNG's JSON API (self-hostable) and the Brave Search API (hosted), chosen as
Hermes chooses them (``web.search_backend``, ``web.backend``, ``SEARXNG_URL``, ``BRAVE_SEARCH_API_KEY``)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Protocol

import attrs
import httpx2

from config.terminal import WebConfig
from tools.redact import redact_secrets
from tools.web.errors import SearchError

__all__ = [
    "BRAVE_VARIABLE",
    "SEARXNG_VARIABLE",
    "BraveBackend",
    "SearchBackend",
    "SearchHit",
    "SearchSources",
    "SearxngBackend",
    "search_sources",
    "select_backend",
]

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
    name: str = "brave-free"

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


#: Hermes's variables: the SearXNG instance, and the key of Brave Search's free tier.
SEARXNG_VARIABLE, BRAVE_VARIABLE = "SEARXNG_URL", "BRAVE_SEARCH_API_KEY"
#: The variable this project read the Brave key from before it took Hermes's name.
OLD_BRAVE_VARIABLE = "BRAVE_API_KEY"


@attrs.frozen
class SearchSources:
    """Where each backend would search: the SearXNG address and the Brave key (empty: not configured),
    and what the user should be told about how they were found."""

    searxng_url: str
    brave_key: str = attrs.field(repr=False)
    notes: tuple[str, ...] = ()


def search_sources(config: WebConfig, environ: Mapping[str, str]) -> SearchSources:
    """Read the SearXNG address and the Brave key as Hermes does, our earlier names still honoured.

    ``SEARXNG_URL`` wins over ``web.searxng_url``; the Brave key is read from ``web.brave_api_key_env``
    (``BRAVE_SEARCH_API_KEY``), and, when that is Hermes's variable and unset, from ``BRAVE_API_KEY``.
    """
    notes = []
    url = environ.get(SEARXNG_VARIABLE, "").strip()
    if url and config.searxng_url and config.searxng_url != url:
        notes.append(f"web.searxng_url ({config.searxng_url}) is ignored: {SEARXNG_VARIABLE} is set, to {url}")
    url = url or config.searxng_url or ""
    key = environ.get(config.brave_api_key_env, "").strip()
    old_key = environ.get(OLD_BRAVE_VARIABLE, "").strip() if config.brave_api_key_env == BRAVE_VARIABLE else ""
    if old_key and not key:
        notes.append(f"the Brave key is read from {OLD_BRAVE_VARIABLE}; rename it {BRAVE_VARIABLE}, Hermes's name")
        key = old_key
    elif old_key and old_key != key:
        notes.append(f"{OLD_BRAVE_VARIABLE} is ignored: {BRAVE_VARIABLE} is set, to another key")
    return SearchSources(url, key, tuple(notes))


def select_backend(config: WebConfig, environ: Mapping[str, str], client: httpx2.AsyncClient) -> SearchBackend | None:
    """The backend ``config`` and the environment call for; None when nothing is configured.

    As in Hermes: ``web.search_backend`` when it is available, else ``web.backend`` (``auto``: SearXNG, then
    Brave, whichever is configured).
    """
    sources = search_sources(config, environ)
    available: dict[str, SearchBackend] = {}
    if sources.searxng_url:
        available["searxng"] = SearxngBackend(client, sources.searxng_url)
    if sources.brave_key:
        available["brave-free"] = BraveBackend(client, config.brave_base_url, sources.brave_key)
    if config.search_backend in available:
        return available[config.search_backend]
    if config.backend == "auto":
        return next(iter(available.values()), None)
    return available.get(config.backend)
