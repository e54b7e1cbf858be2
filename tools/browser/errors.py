"""Errors of the browser tools.

The tree::

    ToolError
    └── BrowserError                 a browser tool could not do what it was asked (the model sees why)
        ├── BrowserUnavailable       no browser can run here (the message names the install command)
        ├── DialogBlocking           a JavaScript dialog holds the page until browser_dialog answers it
        └── CdpError                 Chromium answered a DevTools command with an error, or went away
"""

from __future__ import annotations

from typing import Any

from tools.errors import ToolError

__all__ = ["BrowserError", "BrowserUnavailable", "CdpError", "DialogBlocking"]


class BrowserError(ToolError):
    """A browser tool call failed; ``str()`` is what the model is told, with Hermes's ``"success": false``."""

    def __init__(self, message: str = "", **details: Any) -> None:
        super().__init__(message, **{"success": False, **details})


class BrowserUnavailable(BrowserError):
    """No browser is installed, or it could not start; the message says how to install one."""


class CdpError(BrowserError):
    """A DevTools Protocol command failed, or the browser's pipe closed under it."""


class DialogBlocking(BrowserError):
    """The page has a JavaScript dialog open, so it cannot be read or acted on until the dialog is answered.

    Args:
        pending: the open dialogs as the model sees them (``pending_dialogs`` of the result).
    """

    def __init__(self, pending: list[dict[str, Any]]) -> None:
        super().__init__(
            "A JavaScript dialog is open and holds the page: answer it with browser_dialog (accept or dismiss).",
            pending_dialogs=pending,
        )
        self.pending = pending
