"""The ``browser_*`` tools: Hermes 0.19's names, parameters and result shapes, over the session's browser.

Each handler asks its session for the browser (:meth:`tools.context.ToolContext.browser`: started at the
first call, an actor in the session's tree) and acts on its newest page. Results are Hermes's objects
(``success`` and the tool's fields); a failure is ``{"error": ..., "success": false}``. What differs from
Hermes is in docs/HERMES_COMPAT.md.
"""

from __future__ import annotations

import logging
import os
import secrets
from typing import TYPE_CHECKING, Any

import trio

from config.browser import BrowserConfig
from tools.browser.chromium import INSTALL_HINT, find_browser
from tools.browser.errors import BrowserError
from tools.errors import ToolError
from tools.redact import redact_secrets
from tools.results import ToolResult
from tools.web import window_page

if TYPE_CHECKING:
    from tools.browser.browser import Browser
    from tools.context import ToolContext
    from tools.registry import ToolRegistry

__all__ = ["BROWSER_SCHEMAS", "BrowserTools", "register_browser_tools"]

log = logging.getLogger(__name__)

#: A snapshot longer than this is cut, the whole of it saved to a file (Hermes's threshold).
SNAPSHOT_CHARS = 15_000
_SCREENSHOTS = "browser_screenshots"
_NEEDS_PAGE = " Needs browser_navigate first."
_REF = {"type": "string", "description": "The element's ref from the latest snapshot, such as '@e5'."}


def _schema(name: str, description: str, properties: dict[str, Any] | None = None, required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "parameters": {"type": "object", "properties": properties or {}, "required": list(required)},
    }


BROWSER_SCHEMAS: dict[str, dict[str, Any]] = {
    schema["name"]: schema
    for schema in (
        _schema(
            "browser_navigate",
            "Open a URL in this session's browser and wait for it to load. Returns the final URL, the title and a "
            "compact snapshot of the page whose [ref=eN] marks are the refs browser_click and browser_type take "
            "as '@eN'. For plain text, JSON or a page only to be read, web_extract is cheaper; use the browser to "
            "interact (forms, buttons, pages built by scripts).",
            {"url": {"type": "string", "description": "The URL to open (https:// is assumed when none is given)."}},
            ("url",),
        ),
        _schema(
            "browser_snapshot",
            "The current page as its accessibility tree, one element a line; actionable elements and headings "
            "carry [ref=eN] (use '@eN' in browser_click and browser_type). full=false (default) leaves out what "
            "only structures the page; full=true keeps every node. A snapshot over 15,000 characters is cut and "
            "the whole of it saved to a file named in the result, for read_file." + _NEEDS_PAGE,
            {"full": {"type": "boolean", "default": False, "description": "Every node, not the compact view."}},
        ),
        _schema(
            "browser_click",
            "Click the element a ref names (from the latest snapshot), and wait for a page load or a download "
            "it starts." + _NEEDS_PAGE,
            {"ref": _REF},
            ("ref",),
        ),
        _schema(
            "browser_type",
            "Replace the text of an input field (named by its ref) with the given text." + _NEEDS_PAGE,
            {"ref": _REF, "text": {"type": "string", "description": "What to type into the field."}},
            ("ref", "text"),
        ),
        _schema(
            "browser_scroll",
            "Scroll the page about half a screen up or down, to bring more of it into view." + _NEEDS_PAGE,
            {"direction": {"type": "string", "enum": ["up", "down"], "description": "Which way to scroll."}},
            ("direction",),
        ),
        _schema("browser_back", "Go back to the previous page of this tab's history." + _NEEDS_PAGE),
        _schema(
            "browser_press",
            "Press a key in the focused element: Enter (submits a form), Tab, Escape, the arrow keys, Backspace, "
            "or a single character." + _NEEDS_PAGE,
            {"key": {"type": "string", "description": "The key, such as 'Enter', 'Tab' or 'ArrowDown'."}},
            ("key",),
        ),
        _schema(
            "browser_get_images",
            "The images of the current page: each one's URL, alt text and size." + _NEEDS_PAGE,
        ),
        _schema(
            "browser_console",
            "The current page's console output (log, warn, error, info) and its uncaught script errors, blocked "
            "requests included. With 'expression', evaluate that JavaScript in the page instead and return its "
            "value as JSON (promises are awaited)." + _NEEDS_PAGE,
            {
                "clear": {"type": "boolean", "default": False, "description": "Empty the record after reading it."},
                "expression": {"type": "string", "description": "JavaScript to evaluate in the page, such as 'document.title'."},
            },
        ),
        _schema(
            "browser_vision",
            "Take a screenshot of the current page to look at it: layouts, images, anything the text snapshot "
            "misses. When this session's model takes images, the screenshot is shown to it after this call; "
            "otherwise the call says vision is unavailable. The result names the saved screenshot (share it with "
            "MEDIA:<path>)." + _NEEDS_PAGE,
            {
                "question": {"type": "string", "description": "What to look for in the page."},
                "annotate": {"type": "boolean", "default": False, "description": "Accepted for Hermes's sake; no labels are drawn."},
            },
            ("question",),
        ),
    )
}


class BrowserTools:
    """The browser tools' handlers.

    Args:
        config: the ``browser`` section.
        executable: the browser found at start, None when there is none (the tools are then hidden).
    """

    def __init__(self, config: BrowserConfig, executable: str | None) -> None:
        self.config = config
        self.executable = executable

    def available(self) -> bool:
        """check_fn of every browser tool: hidden from the model when no browser is installed."""
        return self.executable is not None

    async def _browser(self, ctx: ToolContext) -> Browser:
        if self.executable is None:
            raise BrowserError(f"No browser is installed here. {INSTALL_HINT}")
        return await ctx.browser()

    async def browser_navigate(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Handler of ``browser_navigate``: load the page and return it with a compact snapshot."""
        url = _text(args, "url").strip()
        if "://" not in url and not url.startswith(("about:", "data:")):
            url = "https://" + url
        browser = await self._browser(ctx)
        async with browser.in_use():
            final_url, title = await browser.navigate(url)
            snapshot = await browser.snapshot(full=False)
            text = await _fitted(ctx, final_url, snapshot.text)
        payload: dict[str, Any] = {"success": True, "url": final_url, "title": title, "snapshot": text, "element_count": len(snapshot.refs)}
        return ToolResult(_with_notes(payload, browser))

    async def browser_snapshot(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Handler of ``browser_snapshot``."""
        full = _flag(args, "full")
        browser = await self._browser(ctx)
        async with browser.in_use():
            snapshot = await browser.snapshot(full=full)
            text = await _fitted(ctx, browser.current_url, snapshot.text)
        return ToolResult(_with_notes({"success": True, "snapshot": text, "element_count": len(snapshot.refs)}, browser))

    async def browser_click(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Handler of ``browser_click``."""
        ref = _ref(args)
        browser = await self._browser(ctx)
        async with browser.in_use():
            before = browser.download_guids()
            await browser.click(ref)
        return ToolResult(_with_notes({"success": True, "clicked": ref}, browser, before))

    async def browser_type(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Handler of ``browser_type``; what was typed is shown redacted (a password stays out of the history)."""
        ref, text = _ref(args), _text(args, "text", empty=True)
        browser = await self._browser(ctx)
        async with browser.in_use():
            await browser.type_text(ref, text)
        return ToolResult({"success": True, "typed": redact_secrets(text), "element": ref})

    async def browser_scroll(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Handler of ``browser_scroll``."""
        direction = args.get("direction")
        if direction not in ("up", "down"):
            raise BrowserError(f"Invalid direction {direction!r}: use 'up' or 'down'.")
        browser = await self._browser(ctx)
        async with browser.in_use():
            await browser.scroll(direction)
        return ToolResult({"success": True, "scrolled": direction})

    async def browser_back(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Handler of ``browser_back``."""
        browser = await self._browser(ctx)
        async with browser.in_use():
            url = await browser.back()
        return ToolResult({"success": True, "url": url})

    async def browser_press(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Handler of ``browser_press``."""
        key = _text(args, "key")
        browser = await self._browser(ctx)
        async with browser.in_use():
            before = browser.download_guids()
            await browser.press(key)
        return ToolResult(_with_notes({"success": True, "pressed": key}, browser, before))

    async def browser_get_images(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Handler of ``browser_get_images``."""
        browser = await self._browser(ctx)
        async with browser.in_use():
            images = await browser.images()
        return ToolResult({"success": True, "images": images, "count": len(images)})

    async def browser_console(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Handler of ``browser_console``: the record, or the value of ``expression``."""
        expression = args.get("expression")
        browser = await self._browser(ctx)
        async with browser.in_use():
            if expression is not None:
                if not isinstance(expression, str) or not expression.strip():
                    raise BrowserError("'expression' must be a non-empty string of JavaScript.")
                await browser.settled()
                value = await browser.evaluate(expression)
                return ToolResult({"success": True, "result": value, "result_type": _type_name(value)})
            entries = browser.console(clear=_flag(args, "clear"))
        messages = [{"type": e.kind, "text": e.text, "source": e.source} for e in entries if e.kind != "exception"]
        errors = [{"message": e.text, "source": "exception"} for e in entries if e.kind == "exception"]
        return ToolResult({
            "success": True, "console_messages": messages, "js_errors": errors,
            "total_messages": len(messages), "total_errors": len(errors),
        })  # fmt: skip

    async def browser_vision(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Handler of ``browser_vision``: the screenshot goes to the model when it takes images."""
        question = _text(args, "question")
        browser = await self._browser(ctx)
        async with browser.in_use():
            png = await browser.screenshot()
        saved = await trio.to_thread.run_sync(_save_screenshot, ctx.jail.policy.tmp_dir, png)
        shown = ctx.jail.policy.jail_path(saved)
        if not ctx.sees_images:
            raise BrowserError(
                "Vision is unavailable: this session's model does not take images (model.vision). The screenshot "
                "was saved; use browser_snapshot to read the page as text.",
                screenshot_path=shown,
            )
        return ToolResult(
            {"success": True, "question": question, "screenshot_path": shown,
             "note": "The screenshot follows as an image; look at it to answer the question."},
            images=(saved,),
        )  # fmt: skip


def _text(args: dict[str, Any], name: str, *, empty: bool = False) -> str:
    value = args.get(name)
    if not isinstance(value, str) or (not empty and not value.strip()):
        raise ToolError(f"'{name}' must be a non-empty string.")
    return value


def _flag(args: dict[str, Any], name: str) -> bool:
    value = args.get(name, False)
    if not isinstance(value, bool):
        raise ToolError(f"'{name}' must be true or false.")
    return value


def _ref(args: dict[str, Any]) -> str:
    ref = _text(args, "ref").strip()
    return ref if ref.startswith("@") else "@" + ref


def _type_name(value: Any) -> str:
    """Hermes's ``result_type``: the Python name of the JSON value's type."""
    return type(value).__name__


def _with_notes(payload: dict[str, Any], browser: Browser, downloads_before: frozenset[str] = frozenset()) -> dict[str, Any]:
    """``payload`` with what else happened: downloads the call started, pages closed past the limit."""
    finished = [d for guid, d in browser.downloads.items() if guid not in downloads_before]
    if finished:
        payload["downloads"] = [{"path": d.path, "url": d.url, "state": d.state} for d in finished]
    if browser.page_count > 1:
        payload["open_pages"] = browser.page_count
    if browser.closed_pages:
        payload["closed_pages"] = browser.closed_pages
    return payload


async def _fitted(ctx: ToolContext, url: str, text: str) -> str:
    """``text`` within :data:`SNAPSHOT_CHARS`, the whole of it saved where read_file can reach it."""
    if len(text) <= SNAPSHOT_CHARS:
        return text
    try:
        fitted, _ = await trio.to_thread.run_sync(window_page, ctx.jail.policy, "snapshot:" + url, text, SNAPSHOT_CHARS)
    except OSError as exc:
        log.warning("browser_snapshot: could not save the full snapshot: %s", exc.strerror)
        return text[:SNAPSHOT_CHARS] + "\n[... cut; use browser_scroll and browser_snapshot for the rest ...]"
    return fitted


def _save_screenshot(tmp_dir: str, png: bytes) -> str:
    directory = os.path.join(tmp_dir, _SCREENSHOTS)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    path = os.path.join(directory, f"browser_screenshot_{secrets.token_hex(8)}.png")
    with open(path, "wb") as file:
        file.write(png)
    return path


def register_browser_tools(registry: ToolRegistry, config: BrowserConfig) -> BrowserTools:
    """Register the browser tools (toolset ``browser``), hidden with a log line when no browser is installed."""
    executable = find_browser(config)
    if executable is None:
        log.warning("browser tools left out: no browser found (browser.executable_path: %s). %s", config.executable_path, INSTALL_HINT)
    tools = BrowserTools(config, executable)
    for name, schema in BROWSER_SCHEMAS.items():
        registry.register(
            name=name, toolset="browser", schema=schema, handler=getattr(tools, name), check_fn=tools.available,
            max_result_size_chars=60_000, emoji="🌐",
        )  # fmt: skip
    return tools
