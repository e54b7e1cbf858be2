"""Reading a request's body under a size cap (raw, or as JSON), for every endpoint that takes one."""

from __future__ import annotations

from contextlib import aclosing
from typing import Any

from starlette.requests import Request

from actors.platform.api.errors import BadRequest, BodyTooLarge
from messages.untrusted import UntrustedJsonError
from messages.untrusted import loads as loads_untrusted

__all__ = ["read_body", "read_json"]


async def read_body(request: Request, limit: int) -> bytes:
    """The request's raw body, read at most ``limit`` bytes (a declared length over it is refused unread).

    Raises:
        BodyTooLarge: the body (declared or actual) is over ``limit``.
    """
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(f"the request body is larger than {limit} bytes")
    body = bytearray()
    async with aclosing(request.stream()) as pieces:
        async for piece in pieces:
            body += piece
            if len(body) > limit:
                raise BodyTooLarge(f"the request body is larger than {limit} bytes")
    return bytes(body)


async def read_json(request: Request, limit: int) -> Any:
    """The request body as JSON, read at most ``limit`` bytes.

    Raises:
        BodyTooLarge: the body (declared or actual) is over ``limit``.
        BadRequest: not JSON.
    """
    body = await read_body(request, limit)
    try:
        return loads_untrusted(body)
    except UntrustedJsonError as exc:
        raise BadRequest(f"the request body {exc}") from exc
