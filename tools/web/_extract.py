"""Fetching pages and turning them into readable markdown."""

from __future__ import annotations

import logging
import re
from typing import Any
from urllib.parse import urlsplit

import attrs
import httpx2
import trio

from config.terminal import WebConfig
from tools.redact import redact_secrets
from tools.web._guard import check_public_url
from tools.web.errors import FetchError

__all__ = ["PageResult", "fetch_page", "html_to_markdown"]

log = logging.getLogger(__name__)

# Page furniture that is never the content the model asked for.
_NOISE_TAGS = ("script", "style", "noscript", "nav", "header", "footer", "aside", "form", "iframe", "svg", "template")
_TEXT_TYPES = ("text/plain", "text/markdown", "application/json", "text/csv", "application/xml", "text/xml")
_BLANK_RUNS = re.compile(r"\n{3,}")
_MAX_REDIRECTS = 5


@attrs.frozen
class PageResult:
    """One URL's outcome: its title and markdown, or an error the model can read."""

    url: str
    title: str = ""
    content: str = ""
    truncated: bool = False
    error: str | None = None
    full_text_path: str | None = None
    """Where the whole text of a page cut to its budget is saved (as the session sees the path)."""
    full_chars: int | None = None
    """The whole text's length, when ``content`` is a window of it."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON form; an error entry carries only the URL and the error."""
        if self.error is not None:
            return {"url": self.url, "error": self.error}
        out: dict[str, Any] = {"url": self.url, "title": self.title, "content": self.content, "chars": len(self.content)}
        if self.truncated:
            out["truncated"] = True
        if self.full_text_path is not None:
            out |= {"full_text_path": self.full_text_path, "full_chars": self.full_chars}
        return out


def html_to_markdown(html: str) -> tuple[str, str]:
    """``(title, markdown)`` of an HTML document, without scripts, styles and navigation.

    CPU-bound: call it through ``trio.to_thread.run_sync``.
    """
    # Loaded by the first page read (in that worker thread), not at every daemon start: the HTML parser and
    # its CSS selectors are a tenth of the daemon's imports, and most daemons never read a web page.
    from bs4 import BeautifulSoup  # noqa: PLC0415
    from markdownify import MarkdownConverter  # noqa: PLC0415

    soup = BeautifulSoup(html, "html.parser")
    title = soup.title.get_text(" ", strip=True) if soup.title else ""
    for tag in soup(_NOISE_TAGS):
        tag.decompose()
    root = soup.find("main") or soup.find("article") or soup.body or soup
    markdown = MarkdownConverter(heading_style="ATX", strip=["img"]).convert_soup(root)
    lines = [line.rstrip() for line in markdown.splitlines()]
    return title, _BLANK_RUNS.sub("\n\n", "\n".join(lines)).strip()


async def _download(client: httpx2.AsyncClient, url: str, config: WebConfig) -> tuple[bytes, str, str, bool]:
    """``(body, content type, charset, cut)``: at most ``max_download_bytes`` of the body.

    Redirects are followed here, hop by hop, so each new host passes the address check.
    """
    for _ in range(_MAX_REDIRECTS + 1):
        if not config.allow_private_addresses:
            await check_public_url(url)
        async with client.stream("GET", url, follow_redirects=False) as response:
            if response.has_redirect_location:
                url = str(response.url.join(response.headers["location"]))
                if urlsplit(url).scheme not in ("http", "https"):
                    raise FetchError("The page redirected to a URL that is not http(s).")
                continue
            if response.status_code >= 400:
                raise FetchError(f"HTTP {response.status_code} {response.reason_phrase}".strip())
            content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
            charset = response.charset_encoding or "utf-8"
            body, cut = await _read_capped(response, config.max_download_bytes)
            return body, content_type, charset, cut
    raise FetchError(f"Too many redirects (more than {_MAX_REDIRECTS}).")


async def _read_capped(response: httpx2.Response, limit: int) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size >= limit:
            return b"".join(chunks)[:limit], True
    return b"".join(chunks), False


async def fetch_page(client: httpx2.AsyncClient, url: str, config: WebConfig) -> PageResult:
    """Fetch ``url`` and convert it; every failure becomes a ``PageResult`` with ``error`` set.

    Bounded by ``config.request_timeout_seconds`` for the whole download.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return PageResult(url=url, error="Only absolute http:// or https:// URLs can be extracted.")
    shown = redact_secrets(url)
    try:
        with trio.fail_after(config.request_timeout_seconds):
            body, content_type, charset, cut = await _download(client, url, config)
        title, content = await trio.to_thread.run_sync(_convert, body, content_type, charset)
    except trio.TooSlowError:
        return PageResult(url=shown, error=f"Timed out after {config.request_timeout_seconds:g}s.")
    except FetchError as exc:
        return PageResult(url=shown, error=str(exc))
    except httpx2.HTTPError as exc:
        log.info("web_extract: %s failed: %s", shown, type(exc).__name__)
        return PageResult(url=shown, error=f"Could not fetch the page ({type(exc).__name__}).")
    return PageResult(url=shown, title=title, content=content, truncated=cut)


def _convert(body: bytes, content_type: str, charset: str) -> tuple[str, str]:
    try:
        text = body.decode(charset, errors="replace")
    except LookupError:
        text = body.decode("utf-8", errors="replace")
    if content_type in ("text/html", "application/xhtml+xml") or (not content_type and "<html" in text[:2000].lower()):
        return html_to_markdown(text)
    if content_type.startswith("text/") or content_type in _TEXT_TYPES:
        return "", text.strip()
    raise FetchError(f"Unsupported content type {content_type or 'unknown'}; only HTML and text pages can be extracted.")
