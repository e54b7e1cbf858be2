"""The SDKs' telemetry headers, left off every request.

The ``x-stainless-*`` headers are the SDK makers' statistics: no provider needs them, and h11 checks
every header of every request against regular expressions, which at 200 sessions was 7% of the
daemon's time. A client is built without the default ones (:data:`TELEMETRY_HEADERS`); the two the
OpenAI SDK adds per request are left off by :data:`OPENAI_REQUEST_HEADERS`.
"""

from __future__ import annotations

from types import MappingProxyType

import openai

__all__ = ["OPENAI_REQUEST_HEADERS", "TELEMETRY_HEADERS"]

TELEMETRY_HEADERS = (
    "X-Stainless-Lang", "X-Stainless-Package-Version", "X-Stainless-OS", "X-Stainless-Arch",
    "X-Stainless-Runtime", "X-Stainless-Runtime-Version", "X-Stainless-Async",
    "x-stainless-retry-count", "x-stainless-read-timeout", "x-stainless-timeout",
)
"""Header names to give an SDK client as ``Omit()`` defaults."""

OPENAI_REQUEST_HEADERS = MappingProxyType(
    {"x-stainless-retry-count": openai.Omit(), "x-stainless-read-timeout": openai.Omit()}
)
"""Per-request headers of an OpenAI SDK call: the SDK adds these two unless a request omits them."""
