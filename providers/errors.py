"""Errors of the provider layer.

Every failure of an SDK or of the HTTP transport is translated once, where the
adapter calls the SDK, into one of these; the original exception stays
attached as ``__cause__`` so the recovery classifier can also look at its type::

    ProviderError(Exception)            .status_code .body .headers .error_type
    ├── ProviderStatusError             the provider answered with an error (HTTP 4xx/5xx,
    │                                   or an error event inside a 200 stream)
    ├── ProviderConnectionError         the connection failed or dropped mid-stream
    │   └── ProviderTimeoutError        connect/read timeout
    │       └── StreamStalled           no chunk for ``stale_timeout`` seconds
    ├── ProviderResponseError           the provider sent something we cannot parse
    ├── ProviderConfigError             settings that cannot work (unknown mode, no model)
    └── ClientPoolClosed                the shared client pool was already closed

    ScriptError(ValueError)             a bad step given to the scripted provider server
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class ProviderError(Exception):
    """Base of every provider-layer failure.

    Attributes:
        status_code: HTTP status, or ``None`` when no response arrived.
        body: the decoded error body (dict) or its raw text, or ``None``.
        headers: response headers with lower-case names (``retry-after`` ...).
        error_type: the provider's error type (Anthropic ``overloaded_error``,
            OpenAI ``rate_limit_exceeded`` ...), or ``None``.
    """

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        body: object | None = None,
        headers: Mapping[str, str] | None = None,
        error_type: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.body = body
        self.headers: dict[str, str] = {k.lower(): v for k, v in (headers or {}).items()}
        self.error_type = error_type

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.message!r}, status_code={self.status_code!r}, "
            f"error_type={self.error_type!r})"
        )

    def as_dict(self) -> dict[str, Any]:
        """A JSON-safe summary for logs and status events (no request data)."""
        return {
            "type": type(self).__name__,
            "message": self.message,
            "status_code": self.status_code,
            "error_type": self.error_type,
        }


class ProviderStatusError(ProviderError):
    """The provider answered with an error status or an in-stream error event."""


class ProviderConnectionError(ProviderError):
    """The HTTP connection could not be made or broke before the stream ended."""


class ProviderTimeoutError(ProviderConnectionError):
    """A connect or read timeout expired."""


class StreamStalled(ProviderTimeoutError):
    """The stream sent nothing for longer than the configured stale timeout."""


class ProviderResponseError(ProviderError):
    """The provider's answer could not be understood (malformed SSE, bad JSON)."""


class ProviderConfigError(ProviderError, ValueError):
    """Provider settings that cannot work, found before any request is made."""


class ClientPoolClosed(ProviderError, RuntimeError):
    """A client was asked of a pool that has been closed (pools are not reopened)."""


class UnencodableRequest(ValueError):
    """A request body that cannot be sent as UTF-8 JSON (lone surrogates, bytes); found before sending.

    Not a :class:`ProviderError`: nothing reached the provider. The recovery layer repairs the history
    once and sends it again.
    """


class ScriptError(ValueError):
    """A scripted-provider step that does not make sense (bad key, wrong type)."""
