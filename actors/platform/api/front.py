"""The API's ASGI entry: ``POST /v1/chat/completions`` answered at once, every other request by Starlette.

A completion is the API's hot path: each one went through Starlette's error and
exception middleware and its router (a regular expression per route until the
match), and each message it sent (the SSE stream's head, chunks and end) through
three wrappers of ``send``. Here it is matched by one comparison and its handler
called with the ASGI ``send`` itself. The handler is the same guarded endpoint the
router would call (bearer key and its throttle, body cap, OpenAI-shaped errors), so
a client sees the same answers; other methods on that path (405), unknown paths
(404), the other routes and the ``lifespan`` scope still go to Starlette.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["COMPLETIONS_PATH", "ApiFront"]

#: The route answered without Starlette's router.
COMPLETIONS_PATH = "/v1/chat/completions"

#: What the endpoint returns: an ASGI response (JSON or an SSE stream).
Endpoint = Callable[[Request], Awaitable[Any]]


class ApiFront:
    """An ASGI application: ``POST`` on :data:`COMPLETIONS_PATH` to ``completions``, the rest to ``rest``.

    Args:
        completions: the guarded completions endpoint (auth and errors included).
        rest: the Starlette application serving every other request.
    """

    def __init__(self, completions: Endpoint, rest: ASGIApp) -> None:
        self._completions = completions
        self._rest = rest

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == COMPLETIONS_PATH and scope["method"] == "POST":
            response = await self._completions(Request(scope, receive))
            await response(scope, receive, send)
            return
        await self._rest(scope, receive, send)
