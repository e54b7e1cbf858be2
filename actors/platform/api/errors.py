"""Errors of the HTTP API, each one an OpenAI-style error object on the wire.

The tree::

    ApiError (RuntimeError)          status 500, type server_error
    ├── BadRequest                   400 invalid_request_error (bad JSON, bad field)
    ├── Unauthorized                 401 authentication_error (missing or wrong key)
    ├── KeyBackOff                   429 rate_limit_error, ``Retry-After``: the key is not checked (too many wrong)
    ├── NotFound                     404 invalid_request_error, code not_found
    ├── Conflict                     409 invalid_request_error (no pending approval ...)
    ├── BodyTooLarge                 413 invalid_request_error, code request_too_large
    ├── TooManyRuns                  429 rate_limit_error, ``Retry-After: 1``
    ├── Unavailable                  503 server_error (the daemon cannot serve it now: no store ...)
    └── TurnFailed                   500 server_error (the agent's turn ended in an error)

    ApiStartRefused (PlatformError)  the configuration is unsafe: the API does not start

Session-layer errors (``SessionNotFound``, ``TooManyRunningTurns``, ``SessionBusy``)
are translated into these once, in :mod:`actors.platform.api.gateway`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from control.errors import PlatformError

if TYPE_CHECKING:
    from starlette.responses import JSONResponse

__all__ = [
    "ApiError",
    "ApiStartRefused",
    "BadRequest",
    "BodyTooLarge",
    "Conflict",
    "KeyBackOff",
    "NotFound",
    "TooManyRuns",
    "TurnFailed",
    "Unauthorized",
    "Unavailable",
    "error_response",
]


class ApiError(RuntimeError):
    """An error answered to an HTTP client; ``body()`` is OpenAI's error object."""

    status: ClassVar[int] = 500
    type: ClassVar[str] = "server_error"
    code: ClassVar[str | None] = None

    def __init__(self, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param

    @property
    def headers(self) -> Mapping[str, str]:
        """Extra response headers this error carries."""
        return {}

    def body(self) -> dict[str, Any]:
        """``{"error": {"message", "type", "param", "code"}}``."""
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


class BadRequest(ApiError):
    """The request is malformed: unreadable JSON, a missing or wrongly typed field."""

    status = 400
    type = "invalid_request_error"


class Unauthorized(ApiError):
    """No bearer key, or not the right one."""

    status = 401
    type = "authentication_error"
    code = "invalid_api_key"


class KeyBackOff(ApiError):
    """This client gave too many wrong keys: its next one is not checked before ``wait`` seconds
    (:mod:`actors.platform.api.throttle`)."""

    status = 429
    type = "rate_limit_error"
    code = "too_many_wrong_keys"

    def __init__(self, wait: float) -> None:
        self.retry_after = str(max(1, math.ceil(wait)))
        super().__init__(f"Too many wrong API keys from this address: try again in {self.retry_after} s")

    @property
    def headers(self) -> Mapping[str, str]:
        """When the next key will be checked."""
        return {"Retry-After": self.retry_after}


class NotFound(ApiError):
    """No such route, run or session."""

    status = 404
    type = "invalid_request_error"
    code = "not_found"


class Conflict(ApiError):
    """The resource is not in a state that allows this (no approval is pending)."""

    status = 409
    type = "invalid_request_error"
    code = "conflict"


class BodyTooLarge(ApiError):
    """The request body is larger than ``max_body_bytes``."""

    status = 413
    type = "invalid_request_error"
    code = "request_too_large"


class TooManyRuns(ApiError):
    """The concurrency cap (the API's, or the daemon's running-turn cap) is reached."""

    status = 429
    type = "rate_limit_error"
    code = "rate_limit_exceeded"

    @property
    def headers(self) -> Mapping[str, str]:
        """Clients (the openai SDK among them) retry after this many seconds."""
        return {"Retry-After": "1"}


class Unavailable(ApiError):
    """The daemon cannot serve this now (it runs no sessions or store, a session did not answer)."""

    status = 503


class TurnFailed(ApiError):
    """The agent's turn ended with an error (the provider failed for good ...)."""


class ApiStartRefused(PlatformError):
    """The API's configuration is unsafe (no key and not loopback-only): it does not start."""


def error_response(error: ApiError) -> JSONResponse:
    """The JSON response for ``error``."""
    # Starlette is imported by the API's routes, which are the callers: here it is a lookup. Not at the top: cron
    # reaches these errors (through .turns) in every daemon, whether it serves the API or not.
    from starlette.responses import JSONResponse  # noqa: PLC0415

    return JSONResponse(error.body(), status_code=error.status, headers=dict(error.headers))
