"""The SDKs' telemetry headers, left off every request.

The ``x-stainless-*`` headers are the SDK makers' statistics: no provider needs them, and h11 checks
every header of every request against regular expressions, which at 200 sessions was 7% of the
daemon's time. A client is built without the default ones (:data:`TELEMETRY_HEADERS`); the two the
OpenAI SDK adds per request are left off by :func:`openai_request_headers`.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from types import MappingProxyType, ModuleType

__all__ = ["TELEMETRY_HEADERS", "openai_request_headers"]

TELEMETRY_HEADERS = (
    "X-Stainless-Lang", "X-Stainless-Package-Version", "X-Stainless-OS", "X-Stainless-Arch",
    "X-Stainless-Runtime", "X-Stainless-Runtime-Version", "X-Stainless-Async",
    "x-stainless-retry-count", "x-stainless-read-timeout", "x-stainless-timeout",
)
"""Header names to give an SDK client as ``Omit()`` defaults."""



@functools.cache
def openai_request_headers(sdk: ModuleType) -> Mapping[str, object]:
    """Per-request headers of a call through the OpenAI SDK ``sdk`` (imported lazily, so made once it is
    loaded): the SDK adds these two unless a request omits them."""
    return MappingProxyType({"x-stainless-retry-count": sdk.Omit(), "x-stainless-read-timeout": sdk.Omit()})
