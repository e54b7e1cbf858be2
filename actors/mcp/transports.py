"""Opening a connection to one configured server, whatever its transport.

:func:`open_transport` yields a :class:`Transport`: the two streams ``mcp.ClientSession`` takes,
and, for a stdio server, its process (to tell when and how it ended). The HTTP transports are the
SDK's own (streamable HTTP, or the legacy SSE one when the URL's path ends in ``/sse``); they run
on anyio, so on Trio here, and bring ``httpx2``, the HTTP client the rest of the daemon uses too.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import attrs
import httpx2
import trio
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from actors.mcp.stdio import StdioServer, open_stdio
from config.mcp import McpServerConfig
from tools.jail._spawner import Spawner

if TYPE_CHECKING:
    from tools.jail.runtime import DaemonJails

__all__ = ["Transport", "open_transport"]

#: How long an HTTP response (an SSE stream) may stay silent: the SDK's default.
_HTTP_READ_TIMEOUT = 300.0


@attrs.frozen
class Transport:
    """An open connection's streams, and the stdio server's process (None over HTTP)."""

    read: Any
    write: Any
    process: StdioServer | None = None

    def describe_end(self) -> str:
        """How the server ended, when the transport can tell (a process's status and last stderr line)."""
        return "" if self.process is None else self.process.describe_exit()


@asynccontextmanager
async def open_transport(
    config: McpServerConfig, spawner: Spawner, environ: Mapping[str, str], jails: DaemonJails | None = None
) -> AsyncIterator[Transport]:
    """Connect to ``config``'s server; leaving the block closes the connection (and stops a stdio server).

    A stdio server starts through ``jails``' launcher where given (see :mod:`actors.mcp.stdio`).

    Raises:
        OSError: a stdio server's program or directory is missing or cannot run.
        httpx2.HTTPError: an HTTP server cannot be reached (SSE: at connect time).
    """
    transport = config.transport
    if transport == "stdio":
        async with open_stdio(config, spawner, environ, jails) as (read, write, process):
            yield Transport(read, write, process)
    else:
        assert config.url is not None
        # Building an httpx2 client reads the CA bundle and makes an SSL context (20-90 ms of CPU): off
        # the event loop, or every HTTP server's (re)connection would stall the whole daemon that long.
        timeout = httpx2.Timeout(config.connect_timeout, read=max(_HTTP_READ_TIMEOUT, config.timeout))
        http = await trio.to_thread.run_sync(
            functools.partial(httpx2.AsyncClient, headers=dict(config.headers), timeout=timeout)
        )
        async with http:
            if transport == "sse":
                # The SDK's SSE client builds its own client through this factory: hand it ours.
                async with sse_client(
                    config.url, timeout=config.connect_timeout, sse_read_timeout=_HTTP_READ_TIMEOUT,
                    # The SDK only enters what the factory returns (async with): _Borrowed, not an AsyncClient.
                    httpx_client_factory=lambda **_: _Borrowed(http),  # type: ignore[arg-type]
                ) as (read, write):
                    yield Transport(read, write)
            else:
                async with streamable_http_client(config.url, http_client=http) as (read, write):
                    yield Transport(read, write)


class _Borrowed:
    """An httpx2 client lent to the SDK as a context manager that does not close it (its owner does)."""

    def __init__(self, client: httpx2.AsyncClient) -> None:
        self._client = client

    async def __aenter__(self) -> httpx2.AsyncClient:
        return self._client

    async def __aexit__(self, *exc_info: object) -> None:
        return None
