"""The browser tools: Hermes's ``browser_*`` tools over a session's own Chromium (DevTools Protocol on a pipe)."""

from __future__ import annotations

from tools.browser._tool import BROWSER_SCHEMAS, BrowserTools, register_browser_tools
from tools.browser.browser import Browser, ConsoleEntry, Download
from tools.browser.chromium import INSTALL_HINT, chromium_argv, find_browser
from tools.browser.errors import BrowserError, BrowserUnavailable, CdpError
from tools.browser.requests import RequestRules
from tools.browser.snapshot import Snapshot, render_snapshot

__all__ = [
    "BROWSER_SCHEMAS",
    "INSTALL_HINT",
    "Browser",
    "BrowserError",
    "BrowserTools",
    "BrowserUnavailable",
    "CdpError",
    "ConsoleEntry",
    "Download",
    "RequestRules",
    "Snapshot",
    "chromium_argv",
    "find_browser",
    "register_browser_tools",
    "render_snapshot",
]
