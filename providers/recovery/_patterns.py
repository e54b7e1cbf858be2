"""Message fragments and type names the classifier matches (all lower-case)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType


def has_any(text: str, fragments: Iterable[str]) -> bool:
    """True when any fragment occurs in ``text``."""
    return any(fragment in text for fragment in fragments)


CONTEXT_OVERFLOW = (
    "context length",
    "context_length",
    "context window",
    "maximum context",
    "prompt is too long",
    "input is too long",
    "exceed context limit",
    "exceeds the context",
    "reduce the length of the messages",
    "maximum prompt length",
    "too many input tokens",
)

BILLING = (
    "insufficient_quota",
    "exceeded your current quota",
    "insufficient credit",
    "insufficient balance",
    "credit balance is too low",
    "out of credits",
    "requires more credits",
    "billing",
    "payment required",
)

USAGE_LIMIT = ("usage limit", "usage_limit", "limit reached", "spending limit", "plan limit", "daily limit")

TRANSIENT_SIGNALS = (
    "try again in",
    "try again at",
    "try again later",
    "retry after",
    "resets at",
    "reset at",
    "will reset",
    "resets in",
)

RATE_LIMIT = (
    "rate limit",
    "rate_limit",
    "ratelimit",
    "too many requests",
    "requests per minute",
    "tokens per minute",
    "throttl",
)

OVERLOADED = ("overloaded", "capacity", "temporarily unavailable", "service unavailable")

LONG_CONTEXT_TIER = ("extra usage", "long context", "long_context")

POLICY_BLOCKED = ("data policy", "no endpoints found matching your data policy")

IMAGE_TOO_LARGE = ("too large", "exceeds the maximum", "maximum allowed size", "dimensions exceed", "image exceeds")

SSL_TRANSIENT = (
    "[ssl",
    "ssl:",
    "ssl error",
    "sslerror",
    "tlsv1",
    "tls alert",
    "bad record mac",
    "decryption failed",
    "eof occurred in violation of protocol",
    "unexpected eof while reading",
)

DISCONNECT = (
    "server disconnected",
    "peer closed connection",
    "incomplete chunked read",
    "connection reset",
    "connection aborted",
    "remote end closed",
    "connection was closed",
)

# A host name that does not resolve, as glibc, macOS and Windows word it.
NAME_RESOLUTION = (
    "name or service not known",
    "temporary failure in name resolution",
    "nodename nor servname provided",
    "no address associated with hostname",
    "getaddrinfo failed",
)

# Nothing listens at the address (a local server not started, a wrong port): Trio words it as the
# attempts failing, the socket layer as a refusal.
CONNECTION_REFUSED = ("connection refused", "all attempts to connect to")

DISCONNECT_TYPES = frozenset({"RemoteProtocolError", "ReadError", "ConnectionResetError", "BrokenResourceError"})

TRANSPORT_TYPES = frozenset(
    {
        "TimeoutException",
        "ConnectTimeout",
        "ReadTimeout",
        "WriteTimeout",
        "PoolTimeout",
        "TransportError",
        "NetworkError",
        "ConnectError",
        "WriteError",
        "CloseError",
        "ProtocolError",
        "APIConnectionError",
        "APITimeoutError",
        "ProviderConnectionError",
        "TooSlowError",
        "TimeoutError",
        "ConnectionError",
        "ClosedResourceError",
    }
)

# Error types and codes carried in a body (or an in-stream error event), mapped
# to the HTTP status they stand for, so one table decides both.
ERROR_CODES: Mapping[str, int] = MappingProxyType({
    "invalid_request_error": 400,
    "authentication_error": 401,
    "invalid_api_key": 401,
    "billing_error": 402,
    "insufficient_quota": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "model_not_found": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "rate_limit_exceeded": 429,
    "context_length_exceeded": 400,
    "api_error": 500,
    "server_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
})
