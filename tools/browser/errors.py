"""Errors of the browser tools.

The tree::

    ToolError
    └── BrowserError                 a browser tool could not do what it was asked (the model sees why)
        ├── BrowserUnavailable       no browser can run here (the message names the install command)
        └── CdpError                 Chromium answered a DevTools command with an error, or went away
"""

from __future__ import annotations

from typing import Any

from tools.errors import ToolError

__all__ = ["BrowserError", "BrowserUnavailable", "CdpError"]


class BrowserError(ToolError):
    """A browser tool call failed; ``str()`` is what the model is told, with Hermes's ``"success": false``."""

    def __init__(self, message: str = "", **details: Any) -> None:
        super().__init__(message, **{"success": False, **details})


class BrowserUnavailable(BrowserError):
    """No browser is installed, or it could not start; the message says how to install one."""


class CdpError(BrowserError):
    """A DevTools Protocol command failed, or the browser's pipe closed under it."""
