"""The ``web_search`` and ``web_extract`` tools: schemas, handlers, registration."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import httpx2
import trio

from config.terminal import WebConfig
from tools.errors import ToolError
from tools.results import ToolResult
from tools.web._extract import PageResult, fetch_page
from tools.web._search import SearchBackend, select_backend
from tools.web.errors import SearchError

if TYPE_CHECKING:
    from tools.context import ToolContext
    from tools.registry import ToolRegistry

__all__ = ["WEB_EXTRACT_SCHEMA", "WEB_SEARCH_SCHEMA", "WebTools", "open_web_client", "register_web_tools"]

log = logging.getLogger(__name__)

# Pages fetched at once by one web_extract call.
_EXTRACT_CONCURRENCY = 4

WEB_SEARCH_SCHEMA: dict[str, Any] = {
    "name": "web_search",
    "description": (
        "Search the web. Returns data.web: a list of {title, url, description}. "
        "Use web_extract on the URLs worth reading."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to search for."},
            "limit": {"type": "integer", "minimum": 1, "maximum": 20, "description": "Number of results (default 5)."},
        },
        "required": ["query"],
    },
}

WEB_EXTRACT_SCHEMA: dict[str, Any] = {
    "name": "web_extract",
    "description": (
        "Fetch web pages and return their main text as markdown (scripts, styles and navigation removed). "
        "Returns results: one entry per URL with title and content, or an error for that URL."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "urls": {"type": "array", "items": {"type": "string"}, "description": "http(s) URLs to read."},
        },
        "required": ["urls"],
    },
}


def open_web_client(config: WebConfig) -> httpx2.AsyncClient:
    """The HTTP client the web tools share; the caller closes it (``await client.aclose()``)."""
    return httpx2.AsyncClient(
        timeout=httpx2.Timeout(config.request_timeout_seconds),
        headers={"User-Agent": config.user_agent},
        follow_redirects=False,
    )


class WebTools:
    """Handlers of the web tools over one shared ``httpx2.AsyncClient``.

    ``environ`` is where API keys are looked up (the daemon's environment by default); it
    is read on every call, so a key added later takes effect.
    """

    def __init__(self, config: WebConfig, client: httpx2.AsyncClient, environ: Mapping[str, str] | None = None) -> None:
        self.config = config
        self.client = client
        self._environ = environ if environ is not None else os.environ

    def backend(self) -> SearchBackend | None:
        """The search backend in effect now, if any."""
        return select_backend(self.config, self._environ, self.client)

    def available(self) -> bool:
        """check_fn of both tools: hidden from the model when no backend is configured."""
        return self.backend() is not None

    async def web_search(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Handler of ``web_search``.

        Raises:
            ToolError: a bad argument, no backend, or the backend failed (named in ``backend``).
        """
        query = args.get("query")
        if not isinstance(query, str) or not query.strip():
            raise ToolError("web_search needs a non-empty 'query' string.")
        limit = args.get("limit", 5)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ToolError("'limit' must be a positive integer.")
        limit = min(limit, self.config.max_results)
        backend = self.backend()
        if backend is None:
            raise ToolError("Web search is not configured (no SearXNG URL or search API key).")
        try:
            hits = await backend.search(query.strip(), limit)
        except SearchError as exc:
            log.info("web_search via %s failed: %s", backend.name, exc)
            raise ToolError(str(exc), backend=backend.name) from exc
        web = [hit.to_dict(position) for position, hit in enumerate(hits, start=1)]
        return ToolResult({"success": True, "query": query, "backend": backend.name, "data": {"web": web}})

    async def web_extract(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Handler of ``web_extract``: every URL gets a result or its own error.

        Raises:
            ToolError: no URLs, or more than ``max_urls``.
        """
        urls = args.get("urls")
        if isinstance(urls, str):
            urls = [urls]
        if not isinstance(urls, list) or not urls or not all(isinstance(url, str) for url in urls):
            raise ToolError("web_extract needs 'urls': a non-empty list of URL strings.")
        if len(urls) > self.config.max_urls:
            raise ToolError(f"At most {self.config.max_urls} URLs per call; split the list into several calls.")
        results: list[PageResult | None] = [None] * len(urls)
        limiter = trio.CapacityLimiter(_EXTRACT_CONCURRENCY)

        async def one(index: int, url: str) -> None:
            async with limiter:
                results[index] = await fetch_page(self.client, url.strip(), self.config)

        async with trio.open_nursery() as nursery:
            for index, url in enumerate(urls):
                nursery.start_soon(one, index, url)
        fetched = [result for result in results if result is not None]
        failed = sum(result.error is not None for result in fetched)
        pages = [result.to_dict() for result in fetched]
        return ToolResult({"results": pages, "succeeded": len(pages) - failed, "failed": failed})


def register_web_tools(
    registry: ToolRegistry, config: WebConfig, http_client: httpx2.AsyncClient, environ: Mapping[str, str] | None = None
) -> WebTools:
    """Register ``web_search`` and ``web_extract`` (toolset ``web``), hidden when no backend is configured.

    ``http_client`` is owned by the caller (see ``open_web_client``), who closes it at shutdown.
    """
    tools = WebTools(config, http_client, environ)
    for name, schema, handler in (
        ("web_search", WEB_SEARCH_SCHEMA, tools.web_search),
        ("web_extract", WEB_EXTRACT_SCHEMA, tools.web_extract),
    ):
        registry.register(
            name=name,
            toolset="web",
            schema=schema,
            handler=handler,
            check_fn=tools.available,
            max_result_size_chars=200_000,
            parallel_safe=True,
            emoji="🌐",
        )
    return tools
