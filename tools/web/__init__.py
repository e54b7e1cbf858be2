"""The web tools: ``web_search`` (SearXNG or Brave) and ``web_extract`` (HTML to markdown)."""

from __future__ import annotations

from tools.web._extract import PageResult, fetch_page, html_to_markdown
from tools.web._search import BraveBackend, SearchBackend, SearchHit, SearxngBackend, select_backend
from tools.web._window import window_page
from tools.web._tool import WEB_EXTRACT_SCHEMA, WEB_SEARCH_SCHEMA, WebTools, open_web_client, register_web_tools
from tools.web.errors import FetchError, SearchError, WebError

__all__ = [
    "WEB_EXTRACT_SCHEMA",
    "WEB_SEARCH_SCHEMA",
    "BraveBackend",
    "FetchError",
    "PageResult",
    "SearchBackend",
    "SearchError",
    "SearchHit",
    "SearxngBackend",
    "WebError",
    "WebTools",
    "fetch_page",
    "html_to_markdown",
    "open_web_client",
    "register_web_tools",
    "select_backend",
    "window_page",
]
