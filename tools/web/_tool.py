"""The ``web_search`` and ``web_extract`` tools: schemas, handlers, registration."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs
import httpx2
import trio

from config.terminal import WebConfig
from tools.errors import ToolError
from tools.results import ToolResult
from tools.web._extract import PageResult, fetch_page
from tools.web._search import SearchBackend, search_sources, select_backend
from tools.web._window import window_page
from tools.web.errors import SearchError

if TYPE_CHECKING:
    from tools.context import ToolContext
    from tools.registry import ToolRegistry

__all__ = ["WEB_EXTRACT_SCHEMA", "WEB_SEARCH_SCHEMA", "WebTools", "open_web_client", "register_web_tools"]

log = logging.getLogger(__name__)

# Pages fetched at once by one web_extract call.
_EXTRACT_CONCURRENCY = 4
#: URLs one web_extract call takes, and results one web_search returns at most (Hermes's limits).
MAX_URLS = 5
MAX_SEARCH_RESULTS = 100
MIN_CHAR_LIMIT = 2_000

WEB_SEARCH_SCHEMA: dict[str, Any] = {
    "name": "web_search",
    "description": (
        "Search the web. Returns data.web: a list of {title, url, description}. The query goes to the "
        "search backend as written, so operators such as site:example.com, filetype:pdf, -word and "
        "\"exact phrase\" work where the backend supports them. "
        "Use web_extract on the URLs worth reading."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to search for."},
            "limit": {
                "type": "integer", "minimum": 1, "maximum": MAX_SEARCH_RESULTS, "default": 5,
                "description": "Number of results.",
            },
        },
        "required": ["query"],
    },
}

WEB_EXTRACT_SCHEMA: dict[str, Any] = {
    "name": "web_extract",
    "description": (
        "Fetch web pages and return their main text as markdown (scripts, styles and navigation removed). "
        "Returns results: one entry per URL with title and content, or an error for that URL. A page within "
        "the character budget comes back whole; a longer one as its beginning and end, with a note giving the "
        "path of the saved full text and the read_file call for the part left out."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "urls": {
                "type": "array", "items": {"type": "string"}, "maxItems": MAX_URLS,
                "description": f"http(s) URLs to read (at most {MAX_URLS}).",
            },
            "char_limit": {
                "type": "integer", "minimum": MIN_CHAR_LIMIT,
                "description": "Characters of each page to return (default web.extract_char_limit, 15,000).",
            },
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
        for note in search_sources(config, self._environ).notes:
            log.warning("web search: %s", note)

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
        limit = min(limit, MAX_SEARCH_RESULTS)
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
            ToolError: no URLs, more than :data:`MAX_URLS`, or a ``char_limit`` below :data:`MIN_CHAR_LIMIT`.
        """
        urls = args.get("urls")
        if isinstance(urls, str):
            urls = [urls]
        if not isinstance(urls, list) or not urls or not all(isinstance(url, str) for url in urls):
            raise ToolError("web_extract needs 'urls': a non-empty list of URL strings.")
        if len(urls) > MAX_URLS:
            raise ToolError(f"At most {MAX_URLS} URLs per call; split the list into several calls.")
        budget = args.get("char_limit", self.config.extract_char_limit)
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < MIN_CHAR_LIMIT:
            raise ToolError(f"'char_limit' must be an integer of at least {MIN_CHAR_LIMIT:,}.")
        results: list[PageResult | None] = [None] * len(urls)
        limiter = trio.CapacityLimiter(_EXTRACT_CONCURRENCY)

        async def one(index: int, url: str) -> None:
            async with limiter:
                page = await fetch_page(self.client, url.strip(), self.config)
            results[index] = await _windowed(page, ctx, budget)

        async with trio.open_nursery() as nursery:
            for index, url in enumerate(urls):
                nursery.start_soon(one, index, url)
        fetched = [result for result in results if result is not None]
        failed = sum(result.error is not None for result in fetched)
        pages = [result.to_dict() for result in fetched]
        return ToolResult({"results": pages, "succeeded": len(pages) - failed, "failed": failed})


async def _windowed(page: PageResult, ctx: ToolContext, budget: int) -> PageResult:
    """``page`` within ``budget`` characters, its full text saved where the session can read it."""
    if page.error is not None or len(page.content) <= budget:
        return page
    try:
        content, saved = await trio.to_thread.run_sync(window_page, ctx.jail.policy, page.url, page.content, budget)
    except OSError as exc:
        log.warning("web_extract: could not save the full text of %s: %s", page.url, exc.strerror)
        content, saved = page.content[:budget] + "\n\n[... the rest was cut; it could not be saved ...]", None
    return attrs.evolve(page, content=content, truncated=True, full_text_path=saved, full_chars=len(page.content))


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
