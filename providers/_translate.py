"""Translation of SDK and transport exceptions into the provider error family.

Done once, where an adapter talks to its SDK; the original exception is kept
as ``__cause__`` by the caller (``raise translate_error(exc) from exc``).
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Mapping
from typing import Any, Protocol, cast

import httpx2

from messages.untrusted import UntrustedJsonError
from messages.untrusted import loads as loads_untrusted

from ._lazy_sdk import ANTHROPIC, OPENAI, sdk_types
from .errors import (
    ProviderConnectionError,
    ProviderError,
    ProviderResponseError,
    ProviderStatusError,
    ProviderTimeoutError,
)

_ERRORS: tuple[type[BaseException], ...] = (
    httpx2.HTTPError,
    httpx2.StreamError,
    json.JSONDecodeError,
    # TLS failures the transport does not map (the Anthropic SDK lets them escape mid-stream).
    ssl.SSLError,
)


def sdk_errors() -> tuple[type[BaseException], ...]:
    """Exceptions an adapter must translate (anything else is a bug and propagates as is); each SDK's
    once it is loaded (``except sdk_errors():`` is evaluated only when something is raised)."""
    return (*_ERRORS, *_openai("OpenAIError"), *_anthropic("AnthropicError"))


class _SdkError(Protocol):
    """What both SDKs' API errors carry. Their classes are found only once each SDK is loaded, so an
    ``isinstance`` against them cannot tell the type checker; the checks below are made at run time."""

    body: object


class _SdkStatusError(_SdkError, Protocol):
    """What both SDKs' status errors carry besides."""

    response: httpx2.Response
    status_code: int


def _openai(name: str) -> tuple[type[BaseException], ...]:
    return sdk_types(OPENAI, name)


def _anthropic(name: str) -> tuple[type[BaseException], ...]:
    return sdk_types(ANTHROPIC, name)


def translate_error(exc: BaseException, *, stream_status: int | None = None) -> ProviderError:
    """Our error for one SDK / transport exception.

    Args:
        exc: what the SDK or httpx2 raised.
        stream_status: the HTTP status of an already-open stream, used for
            errors reported inside it (they arrive with no status of their own).
    """
    if isinstance(exc, (*_openai("APITimeoutError"), *_anthropic("APITimeoutError"), httpx2.TimeoutException)):
        return ProviderTimeoutError(f"provider request timed out: {_describe(exc)}")
    if isinstance(exc, (*_openai("APIConnectionError"), *_anthropic("APIConnectionError"), httpx2.TransportError, ssl.SSLError)):
        return ProviderConnectionError(f"connection to provider failed: {_describe(exc)}")
    if isinstance(exc, (*_openai("APIResponseValidationError"), *_anthropic("APIResponseValidationError"))):
        return ProviderResponseError(
            f"provider response did not validate: {exc}", status_code=cast(_SdkStatusError, exc).status_code
        )
    if isinstance(exc, (*_openai("APIStatusError"), *_anthropic("APIStatusError"))):
        status_error = cast(_SdkStatusError, exc)
        return _status_error(exc, status_error.response, status_error.status_code)
    if isinstance(exc, (*_openai("APIError"), *_anthropic("APIError"))):
        body = cast(_SdkError, exc).body
        if isinstance(exc, _openai("APIError")) and isinstance(body, Mapping) and "error" not in body:
            body = {"error": dict(body)}  # the SDK hands over only the inner object
        return ProviderStatusError(
            _message(body, str(exc)), status_code=stream_status, body=body, error_type=_error_type(body)
        )
    if isinstance(exc, json.JSONDecodeError):
        return ProviderResponseError(f"provider sent malformed JSON: {exc}", status_code=stream_status)
    return ProviderError(f"provider call failed: {_describe(exc)}", status_code=stream_status)


def _status_error(exc: BaseException, response: httpx2.Response, status: int) -> ProviderStatusError:
    body = _full_body(exc, response)
    anthropic_type = getattr(exc, "type", None)
    # Anthropic reports errors inside a 200 stream with the stream's status.
    where = f"HTTP {status}" if status >= 400 else "in-stream error"
    return ProviderStatusError(
        f"{where}: {_message(body, str(exc))}",
        status_code=status,
        body=body,
        headers=dict(response.headers),
        error_type=anthropic_type if isinstance(exc, _anthropic("APIStatusError")) and anthropic_type else _error_type(body),
    )


def _full_body(exc: Any, response: httpx2.Response) -> object:
    """The error body as the provider sent it (the SDKs sometimes keep only part)."""
    if response.status_code < 400:
        body = exc.body
        if isinstance(exc, _openai("APIError")) and isinstance(body, Mapping) and "error" not in body:
            return {"error": dict(body)}
        return body
    try:
        raw = response.content
    except httpx2.ResponseNotRead:
        return exc.body
    try:
        return loads_untrusted(raw)
    except UntrustedJsonError:
        return raw.decode("utf-8", "replace")


def _error_type(body: object) -> str | None:
    if not isinstance(body, Mapping):
        return None
    inner = body.get("error")
    if isinstance(inner, Mapping):
        # OpenAI's ``code`` (context_length_exceeded, insufficient_quota ...) says more than its ``type``.
        for key in ("code", "type"):
            if isinstance(inner.get(key), str) and inner[key]:
                return inner[key]
    for key in ("type", "code"):
        value = body.get(key)
        if isinstance(value, str) and value and value != "error":
            return value
    return None


def _message(body: object, fallback: str) -> str:
    if isinstance(body, Mapping):
        inner = body.get("error")
        if isinstance(inner, Mapping) and isinstance(inner.get("message"), str):
            return inner["message"]
        if isinstance(body.get("message"), str):
            return body["message"]
    if isinstance(body, str) and body:
        return body[:500]
    return fallback


def _describe(exc: BaseException) -> str:
    cause = exc.__cause__ or exc.__context__
    text = f"{type(exc).__name__}: {exc}"
    if cause is not None and not isinstance(exc, httpx2.HTTPError):
        text += f" ({type(cause).__name__}: {cause})"
    return text
