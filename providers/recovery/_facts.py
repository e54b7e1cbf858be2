"""Facts the classifier reads off an exception, whatever layer raised it.

A failure reaches the classifier as one of the provider layer's
``ProviderError``s (with the SDK exception as ``__cause__``), as a raw SDK
``APIStatusError``/``APIConnectionError``, or as a raw ``httpx2`` transport error
(the Anthropic SDK lets those escape mid-stream). This module flattens all of
them into one ``ErrorFacts`` so the pipeline never needs to know which it got.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from tools.redact import redact_secrets

# How far down the __cause__/__context__ chain we look; chains are short, and a
# bound keeps a pathological cycle from looping.
_MAX_CHAIN = 8
_MAX_MESSAGE = 500



@attrs.frozen
class ErrorFacts:
    """What is known about one failure, normalised for pattern matching.

    ``text`` is every message of the chain and of the body, lower-cased, for
    matching; ``message`` is the first readable message, secrets masked, for
    people.
    """

    status_code: int | None
    error_type: str | None
    error_code: str | None
    text: str
    message: str
    headers: Mapping[str, str]
    body: object
    type_names: frozenset[str]


def chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and its causes (or contexts), outermost first, each once."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(seen) < _MAX_CHAIN:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _mro_names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__ if cls not in (object, BaseException, Exception)}


def _dig(body: object, *path: str) -> object:
    for key in path:
        if not isinstance(body, Mapping):
            return None
        body = body.get(key)
    return body


def _as_str(value: object) -> str | None:
    if isinstance(value, str) and value:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _status_of(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and not isinstance(status, bool):
        return status
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    return status if isinstance(status, int) and not isinstance(status, bool) else None


def _headers_of(exc: BaseException) -> dict[str, str]:
    headers = getattr(exc, "headers", None)
    if not isinstance(headers, Mapping):
        headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is None:
        return {}
    try:
        return {str(k).lower(): str(v) for k, v in headers.items()}
    except (AttributeError, TypeError):
        return {}


def _body_messages(body: object) -> list[str]:
    if isinstance(body, str):
        return [body]
    found = []
    for path in (("error", "message"), ("message",), ("error", "metadata", "raw"), ("detail",)):
        value = _dig(body, *path)
        if isinstance(value, str) and value:
            found.append(value)
    error = _dig(body, "error")
    if isinstance(error, str) and error:
        found.append(error)
    return found


def collect(exc: BaseException) -> ErrorFacts:
    """Flatten ``exc`` and its cause chain into ``ErrorFacts``."""
    status: int | None = None
    body: object = None
    error_type: str | None = None
    error_code: str | None = None
    headers: dict[str, str] = {}
    texts: list[str] = []
    names: set[str] = set()
    for link in chain(exc):
        names |= _mro_names(link)
        if status is None:
            status = _status_of(link)
        if body is None:
            body = getattr(link, "body", None)
        if not headers:
            headers = _headers_of(link)
        error_type = error_type or _as_str(getattr(link, "error_type", None)) or _as_str(getattr(link, "type", None))
        error_code = error_code or _as_str(getattr(link, "error_code", None)) or _as_str(getattr(link, "code", None))
        text = str(link) or type(link).__name__
        texts.append(text)
    error_type = error_type or _as_str(_dig(body, "error", "type")) or _as_str(_dig(body, "type"))
    error_code = (
        error_code
        or _as_str(_dig(body, "error", "code"))
        or _as_str(_dig(body, "code"))
        or _as_str(_dig(body, "error", "details", "error_code"))
    )
    body_messages = _body_messages(body)
    readable = body_messages[0] if body_messages else texts[0]
    texts.extend(body_messages)
    if error_type:
        texts.append(error_type)
    if error_code:
        texts.append(error_code)
    # API keys sometimes appear (partly masked or not) in provider error messages.
    message = redact_secrets(" ".join(readable.split()))[:_MAX_MESSAGE]
    return ErrorFacts(
        status_code=status,
        error_type=error_type,
        error_code=error_code,
        text=" | ".join(texts).lower(),
        message=message,
        headers=headers,
        body=body,
        type_names=frozenset(names),
    )


def find_reset_hint(facts: ErrorFacts) -> Any:
    """A provider-supplied time when a limit resets, raw (epoch s/ms, ISO-8601 or seconds).

    Looked up in the error body first, then in the rate-limit headers.
    """
    for path in (
        ("error", "reset_at"),
        ("error", "resets_at"),
        ("error", "metadata", "reset_at"),
        ("error", "details", "reset_at"),
        ("reset_at",),
        ("resets_at",),
    ):
        value = _dig(facts.body, *path)
        if value not in (None, ""):
            return value
    for name in ("x-ratelimit-reset", "anthropic-ratelimit-requests-reset", "anthropic-ratelimit-tokens-reset"):
        if facts.headers.get(name):
            return facts.headers[name]
    return None
