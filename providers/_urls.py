"""Request URLs merged once per client and path, for the clients the pool builds.

Every call through the OpenAI SDK merged its path with the client's base URL, then httpx2 parsed the
merged URL's text again to merge it with its own (empty) base URL: three runs of httpx2's URL parser for
the same one or two endpoints. The SDK's ``_prepare_url`` and httpx2's ``_merge_url`` are pure functions
of the base URL and the path, and their results are immutable ``httpx2.URL`` values: :func:`pooled_openai`'s client and :class:`PooledHttpClient` keep them (building a
request went from about 150 to 90 µs of CPU), and everything else of the request (headers, auth, body,
the SDK's stream classes) is built by the SDKs as before.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING

import httpx2

if TYPE_CHECKING:
    import openai

__all__ = ["MERGED_URLS_KEPT", "MergedUrls", "PooledHttpClient", "pooled_openai"]

#: How many paths one client keeps the URL of: the streaming endpoints are a handful; beyond these (paths
#: with ids in them), URLs are merged anew each time and nothing grows.
MERGED_URLS_KEPT = 32


class MergedUrls:
    """The merged URL of each path, valid for one base URL (forgotten when the base URL changes)."""

    def __init__(self) -> None:
        self._base: object = None
        self._urls: dict[str, httpx2.URL] = {}

    def get(self, base: object, path: str, merge: Callable[[str], httpx2.URL]) -> httpx2.URL:
        """The URL ``merge(path)`` returns, merged once for the base URL ``base`` (compared by identity)."""
        if base is not self._base:
            self._base, self._urls = base, {}
        url = self._urls.get(path)
        if url is None:
            url = merge(path)
            if len(self._urls) < MERGED_URLS_KEPT:
                self._urls[path] = url
        return url


@functools.cache
def pooled_openai(sdk: ModuleType) -> type[openai.AsyncOpenAI]:
    """``openai.AsyncOpenAI`` of the SDK ``sdk`` (imported lazily, so made once it is loaded) whose request
    URLs are merged once per path (see the module's docstring).

    Its constructor is the SDK's own (the memo is made at the first request), so its arguments stay checked.
    """

    # The SDK module arrives as a value (it is imported lazily), so its class is no type to the checker.
    class PooledOpenAI(sdk.AsyncOpenAI):  # type: ignore[name-defined]
        """An OpenAI client that merges each path's URL once."""

        _merged_urls: MergedUrls | None = None

        def _prepare_url(self, url: str) -> httpx2.URL:
            if self._merged_urls is None:
                self._merged_urls = MergedUrls()
            return self._merged_urls.get(self._base_url, url, super()._prepare_url)

    return PooledOpenAI


class PooledHttpClient(httpx2.AsyncClient):
    """``httpx2.AsyncClient`` whose request URLs given as text are parsed once each (see the module's docstring)."""

    _merged_urls: MergedUrls | None = None

    def _merge_url(self, url: httpx2.URL | str) -> httpx2.URL:
        if not isinstance(url, str):
            return super()._merge_url(url)
        if self._merged_urls is None:
            self._merged_urls = MergedUrls()
        return self._merged_urls.get(self._base_url, url, super()._merge_url)
