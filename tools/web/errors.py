"""Errors of the web tools.

The tree::

    WebError (Exception)
    ├── SearchError (RuntimeError)        the search backend failed (HTTP status, transport, bad JSON)
    └── FetchError (RuntimeError)         one URL of web_extract could not be fetched or read

``httpx2`` errors are translated into these at the boundary (``raise ... from exc``) and
worded for the model; URLs are redacted before they reach a message.
"""

from __future__ import annotations

__all__ = ["FetchError", "SearchError", "WebError"]


class WebError(Exception):
    """Base of every web-tool error."""


class SearchError(WebError, RuntimeError):
    """The search backend answered with an error or could not be reached."""


class FetchError(WebError, RuntimeError):
    """A page could not be fetched or turned into text."""
