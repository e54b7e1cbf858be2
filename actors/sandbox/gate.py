"""How the admitted calls of one script take turns: the gate the RPC server runs each call under."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Protocol

import trio


class ToolGate(Protocol):
    """Admits one tool call at a time where running it beside the others is safe.

    :class:`tools.parallel.ToolConcurrencyGate` is the implementation the session passes.
    """

    def slot(self, name: str, args: Mapping[str, Any], cwd: str) -> AbstractAsyncContextManager[None]:
        """Wait until ``name(args)`` may run; hold the place for the body of the ``async with``."""
        ...


class SerialGate:
    """The fallback gate: one call at a time, whatever the tool (Hermes Agent's behaviour)."""

    def __init__(self) -> None:
        self._lock = trio.StrictFIFOLock()

    @asynccontextmanager
    async def slot(self, name: str, args: Mapping[str, Any], cwd: str) -> AsyncIterator[None]:
        """Wait for every earlier call to finish."""
        async with self._lock:
            yield
