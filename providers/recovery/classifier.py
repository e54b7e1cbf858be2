"""Classify a provider failure into a reason and recovery hints.

``classify`` runs the seeds' priority-ordered pipeline once per failure; the
retry loop then only reads the flags of the ``ClassifiedError`` it returns:

1. provider-specific patterns (thinking signature, long-context tier gate,
   llama.cpp grammar, data-policy block)
2. HTTP status, refined by the message (402 usage limit vs billing, 400
   context overflow, 429 quota vs rate limit ...)
3. the error type / code from the body (mid-stream errors arrive with status 200)
4. message patterns (billing before rate limit, context overflow)
5. SSL/TLS hiccups: a transient timeout, never compression
6. a server disconnect on a large session: the request was too big
7. a host name that does not resolve, or a refused connection: a connection error, not a timeout
8. transport error types (timeouts, connect and read errors)
9. anything else: unknown, retried with backoff
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import attrs

from providers.metadata import parse_overflow_message
from providers.recovery import _patterns as p
from providers.recovery._facts import ErrorFacts, chain, collect, find_reset_hint

# A session above this share of the context window that sees the server hang
# up is taken to have overflowed it (seeds: "> 60%").
_LARGE_SESSION_RATIO = 0.6
# Providers whose rate limits are per account, not per key.
_ACCOUNT_WIDE_QUOTA_PROVIDERS = frozenset({"google-gemini-cli"})
# Below this many output tokens a lowered max_tokens is useless: compress instead.
_MIN_USEFUL_OUTPUT_TOKENS = 1024


class FailoverReason(enum.Enum):
    """Why a provider call failed (the seeds' taxonomy)."""

    auth = "auth"  # 401/403: rotate the credential, else fall back
    auth_permanent = "auth_permanent"  # auth still fails after a refresh: fall back or abort
    billing = "billing"  # 402 / credits exhausted: rotate at once, else fall back
    rate_limit = "rate_limit"  # 429 or a transient usage limit: rotate, back off, fall back
    overloaded = "overloaded"  # 503/529: back off
    server_error = "server_error"  # 500/502: retry
    timeout = "timeout"  # connect/read timeout, dropped connection: rebuild client, retry
    connection = "connection"  # the host does not resolve or refuses (offline, a typo, no server): quick retries
    context_overflow = "context_overflow"  # prompt too long: compress (or lower max_tokens)
    payload_too_large = "payload_too_large"  # 413: compress
    image_too_large = "image_too_large"  # an attached image is too big: shrink it
    model_not_found = "model_not_found"  # 404: another model
    provider_policy_blocked = "provider_policy_blocked"  # OpenRouter data policy: user must act
    format_error = "format_error"  # other 4xx: the request is wrong, do not repeat it
    thinking_signature = "thinking_signature"  # Anthropic rejected a thinking block: strip and retry
    long_context_tier = "long_context_tier"  # Anthropic long-context tier gate: compress
    llama_cpp_grammar_pattern = "llama_cpp_grammar_pattern"  # llama.cpp rejects regex in tool schemas
    unknown = "unknown"  # unrecognised: retry with backoff


@attrs.frozen
class ClassifiedError:
    """A failure's reason and what the retry loop should do about it.

    Attributes:
        reason: the taxonomy entry.
        retryable: repeating the same request (after any fix below) can succeed.
        should_compress: the history must shrink before the request can succeed.
        should_rotate_credential: another key of the same provider may succeed.
        should_fallback: another provider/model may succeed.
        status_code: the HTTP status, if any.
        message: a short human-readable message, secrets masked.
        retry_after: seconds the provider asked us to wait, if it said.
        reset_hint: a provider-supplied limit reset time, raw (epoch s/ms or
            ISO-8601); the credential pool parses it with its own clock.
        available_output_tokens: the output room a context-overflow error
            stated; the loop lowers ``max_tokens`` to it.
    """

    reason: FailoverReason
    retryable: bool
    should_compress: bool = False
    should_rotate_credential: bool = False
    should_fallback: bool = False
    status_code: int | None = None
    message: str = ""
    retry_after: float | None = None
    reset_hint: object = None
    available_output_tokens: int | None = None


# reason -> (retryable, should_compress, should_rotate_credential, should_fallback)
_FLAGS: Mapping[FailoverReason, tuple[bool, bool, bool, bool]] = MappingProxyType({
    FailoverReason.auth: (False, False, True, True),
    FailoverReason.auth_permanent: (False, False, False, True),
    FailoverReason.billing: (False, False, True, True),
    FailoverReason.rate_limit: (True, False, True, True),
    FailoverReason.overloaded: (True, False, False, True),
    FailoverReason.server_error: (True, False, False, True),
    FailoverReason.timeout: (True, False, False, True),
    FailoverReason.connection: (True, False, False, True),
    FailoverReason.context_overflow: (True, True, False, False),
    FailoverReason.payload_too_large: (True, True, False, False),
    FailoverReason.image_too_large: (False, False, False, False),
    FailoverReason.model_not_found: (False, False, False, True),
    FailoverReason.provider_policy_blocked: (False, False, False, False),
    FailoverReason.format_error: (False, False, False, True),
    FailoverReason.thinking_signature: (True, False, False, False),
    FailoverReason.long_context_tier: (True, True, False, False),
    FailoverReason.llama_cpp_grammar_pattern: (False, False, False, True),
    FailoverReason.unknown: (True, False, False, True),
})


def classify(
    exc: BaseException,
    *,
    provider: str = "",
    approx_tokens: int = 0,
    context_length: int | None = None,
    after_auth_refresh: bool = False,
) -> ClassifiedError:
    """Classify one provider failure.

    Args:
        exc: the exception the provider call raised (a ``ProviderError``, an
            SDK error, or a raw ``httpx2`` transport error).
        provider: the provider name, for provider-specific rules (a rate
            limit of a provider with account-wide quotas does not rotate keys).
        approx_tokens: the estimated size of the request's history.
        context_length: the model's context window, when known.
        after_auth_refresh: an auth failure happened again right after the
            credential was refreshed or rotated: it is permanent.
    """
    facts = collect(exc)
    reason = _pipeline(facts, approx_tokens=approx_tokens, context_length=context_length)
    message = facts.message
    if reason is FailoverReason.connection:
        message = _connection_message(facts, exc)
    if reason is FailoverReason.auth and after_auth_refresh:
        reason = FailoverReason.auth_permanent
    retryable, compress, rotate, fallback = _FLAGS[reason]
    if reason is FailoverReason.rate_limit and provider in _ACCOUNT_WIDE_QUOTA_PROVIDERS:
        rotate = False  # every key shares the account's quota: another key hits the same wall
    available = None
    if reason is FailoverReason.context_overflow:
        available = parse_overflow_message(facts.text).available_output
        if available is not None:
            compress = available < _MIN_USEFUL_OUTPUT_TOKENS
    return ClassifiedError(
        reason=reason,
        retryable=retryable,
        should_compress=compress,
        should_rotate_credential=rotate,
        should_fallback=fallback,
        status_code=facts.status_code,
        message=message,
        retry_after=_retry_after(facts),
        reset_hint=find_reset_hint(facts),
        available_output_tokens=available,
    )


def _pipeline(facts: ErrorFacts, *, approx_tokens: int, context_length: int | None) -> FailoverReason:
    text = facts.text
    status = facts.status_code if facts.status_code and facts.status_code >= 400 else None
    # 1. provider-specific patterns
    special = _provider_specific(facts, status)
    if special is not None:
        return special
    # 2. HTTP status + message refinement
    if status is not None:
        return _by_status(status, text)
    # 3. error type / code from the body (mid-stream error events come with status 200)
    for key in (facts.error_code, facts.error_type):
        if key and key.lower() in p.ERROR_CODES:
            return _by_status(p.ERROR_CODES[key.lower()], text)
    # 4. message patterns: billing before rate limit
    by_message = _by_message(text)
    if by_message is not None:
        return by_message
    # 5. SSL/TLS hiccups are transport noise, checked before the disconnect rule
    if p.has_any(text, p.SSL_TRANSIENT) or "SSLError" in facts.type_names:
        return FailoverReason.timeout
    # 6. the server hung up on a large session: most likely it was too big
    disconnected = p.has_any(text, p.DISCONNECT) or bool(facts.type_names & p.DISCONNECT_TYPES)
    if disconnected and context_length and approx_tokens > _LARGE_SESSION_RATIO * context_length:
        return FailoverReason.context_overflow
    # 7. a name that does not resolve, or an address nobody listens at, fails at once and will not do
    # better in a second either: not a timeout, whose backoff waits most of a minute
    if _name_unresolved(facts) or _refused(facts):
        return FailoverReason.connection
    # 8. transport error types
    if disconnected or facts.type_names & p.TRANSPORT_TYPES:
        return FailoverReason.timeout
    # 9. anything else
    return FailoverReason.unknown


def _name_unresolved(facts: ErrorFacts) -> bool:
    return "gaierror" in facts.type_names or p.has_any(facts.text, p.NAME_RESOLUTION)


def _refused(facts: ErrorFacts) -> bool:
    return "ConnectionRefusedError" in facts.type_names or p.has_any(facts.text, p.CONNECTION_REFUSED)


def _connection_message(facts: ErrorFacts, exc: BaseException) -> str:
    """What went wrong reaching the host, for a person: which host, and whether it resolved."""
    host = request_host(exc)
    if _name_unresolved(facts):
        return f"cannot resolve {host}" if host else "cannot resolve the provider's host name"
    where = host or "the provider"
    port = _request_port(exc)
    if host and port is not None:
        where = f"{host}:{port}"
    return f"connection refused by {where} (is the server running?)"


def _request_url(exc: BaseException) -> Any:
    """The URL the failed request went to, from the SDK's or httpx's ``request`` (None: unknown)."""
    for link in chain(exc):
        try:
            request = getattr(link, "request", None)
        except RuntimeError:  # httpx raises when an error was made without its request
            continue
        url = getattr(request, "url", None)
        if url is not None:
            return url
    return None


def _request_port(exc: BaseException) -> int | None:
    """The port the failed request went to, as its URL says or its scheme implies (None: unknown)."""
    url = _request_url(exc)
    port = getattr(url, "port", None)
    if isinstance(port, int):
        return port
    scheme = getattr(url, "scheme", None)
    return {"http": 80, "https": 443}.get(scheme) if isinstance(scheme, str) else None


def request_host(exc: BaseException) -> str | None:
    """The host the failed request went to, from the SDK's or httpx's ``request`` (None: unknown)."""
    host = getattr(_request_url(exc), "host", None)
    return host if isinstance(host, str) and host else None


def _provider_specific(facts: ErrorFacts, status: int | None) -> FailoverReason | None:
    text = facts.text
    if status in (400, None) and "signature" in text and p.has_any(text, ("thinking", "reasoning")):
        return FailoverReason.thinking_signature
    if status == 429 and p.has_any(text, p.LONG_CONTEXT_TIER):
        return FailoverReason.long_context_tier
    if status in (400, 500, None) and "grammar" in text and p.has_any(text, ("pattern", "regex")):
        return FailoverReason.llama_cpp_grammar_pattern
    if status in (400, 403, 404, None) and p.has_any(text, p.POLICY_BLOCKED):
        return FailoverReason.provider_policy_blocked
    return None


def _by_status(status: int, text: str) -> FailoverReason:
    if status == 401:
        return FailoverReason.auth
    if status == 402:
        return _classify_402(text)
    if status == 403:
        return FailoverReason.billing if p.has_any(text, p.BILLING) else FailoverReason.auth
    if status == 404:
        return FailoverReason.model_not_found
    if status in (408, 504, 524):
        return FailoverReason.timeout
    if status == 413:
        return FailoverReason.payload_too_large
    if status == 429:
        return FailoverReason.billing if p.has_any(text, p.BILLING) else FailoverReason.rate_limit
    if status in (503, 529):
        return FailoverReason.overloaded
    if status >= 500:
        return FailoverReason.server_error
    if status == 400:
        if p.has_any(text, p.CONTEXT_OVERFLOW):
            return FailoverReason.context_overflow
        if p.has_any(text, p.IMAGE_TOO_LARGE) and "image" in text:
            return FailoverReason.image_too_large
    return FailoverReason.format_error


def _classify_402(text: str) -> FailoverReason:
    # A usage limit that says when it lifts is a quota window, not an empty wallet.
    if p.has_any(text, p.USAGE_LIMIT) and p.has_any(text, p.TRANSIENT_SIGNALS):
        return FailoverReason.rate_limit
    return FailoverReason.billing


def _by_message(text: str) -> FailoverReason | None:
    if p.has_any(text, p.USAGE_LIMIT) and p.has_any(text, p.TRANSIENT_SIGNALS):
        return FailoverReason.rate_limit
    if p.has_any(text, p.BILLING):
        return FailoverReason.billing
    if p.has_any(text, p.RATE_LIMIT):
        return FailoverReason.rate_limit
    if p.has_any(text, p.CONTEXT_OVERFLOW):
        return FailoverReason.context_overflow
    if p.has_any(text, p.OVERLOADED):
        return FailoverReason.overloaded
    return None


_TRY_AGAIN = re.compile(r"try again in\s+(\d+(?:\.\d+)?)\s*(milliseconds?|ms|seconds?|secs?|s|minutes?|mins?|m|hours?|h)\b")


def _unit_seconds(unit: str) -> float:
    if unit.startswith(("ms", "milli")):
        return 0.001
    if unit.startswith("s"):
        return 1.0
    if unit.startswith("m"):
        return 60.0
    return 3600.0


def _retry_after(facts: ErrorFacts) -> float | None:
    """Seconds the provider asked us to wait: the Retry-After headers, else "try again in N unit"."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            value = float(facts.headers[name]) * scale
        except (KeyError, ValueError):
            continue
        if value >= 0:
            return value
    match = _TRY_AGAIN.search(facts.text)
    if match:
        return float(match.group(1)) * _unit_seconds(match.group(2))
    return None
