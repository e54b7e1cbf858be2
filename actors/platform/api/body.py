"""Reading a request's body under a size cap, for every endpoint that takes one."""

from __future__ import annotations

from contextlib import aclosing

from starlette.requests import Request

from actors.platform.api.errors import BodyTooLarge

__all__ = ["read_body"]


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
