"""Running the scripted provider: a hypercorn Trio server on loopback."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import trio
from hypercorn.config import Config
from hypercorn.trio import serve

from .app import Disconnect, RecordedRequest, ScriptedProviderApp, ScriptState
from .steps import Step, parse_steps


class ScriptedProvider:
    """Handle on a running scripted provider server (see :func:`serve_scripted_provider`)."""

    def __init__(self, state: ScriptState, base_url: str) -> None:
        self._state = state
        self.base_url = base_url
        """The API base URL, ending in ``/v1`` (what SDK clients take)."""

    @property
    def root_url(self) -> str:
        """The server URL without ``/v1`` (Anthropic's SDK appends ``/v1`` itself)."""
        return self.base_url.removesuffix("/v1")

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, oldest first."""
        return self._state.requests

    @property
    def disconnects(self) -> list[Disconnect]:
        """Every reply a client abandoned mid-stream, oldest first."""
        return self._state.disconnects

    @property
    def queued(self) -> int:
        """Steps still waiting in the script."""
        return len(self._state.steps)

    def push(self, *steps: Step | Mapping[str, Any]) -> None:
        """Append steps (``Step`` objects or their JSON form) to the script.

        Raises:
            ScriptError: a step is invalid; none of them is queued then.
        """
        parsed = [s if isinstance(s, Step) else parse_steps(s)[0] for s in steps]
        self._state.push(parsed)

    def reset(self) -> None:
        """Drop the remaining script and all records."""
        self._state.reset()

    async def wait_disconnects(self, count: int = 1) -> list[Disconnect]:
        """Wait until at least ``count`` mid-stream disconnects were seen."""
        while len(self._state.disconnects) < count:
            await self._state.wait_changed()
        return self._state.disconnects

    async def wait_requests(self, count: int = 1) -> list[RecordedRequest]:
        """Wait until at least ``count`` requests were received."""
        while len(self._state.requests) < count:
            await self._state.wait_changed()
        return self._state.requests


@asynccontextmanager
async def serve_scripted_provider(
    steps: Iterable[Step | Mapping[str, Any]] | None = None,
    rule_mode: bool = False,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    default: Step | Mapping[str, Any] | None = None,
    models: Mapping[str, int] | None = None,
    rule_latency: float = 0.0,
) -> AsyncIterator[ScriptedProvider]:
    """Run a scripted provider server for the duration of the block.

    Args:
        steps: initial script.
        rule_mode: answer from the built-in demo rules once the script is empty.
        host, port: where to listen (port 0 picks a free port).
        default: step used when the script is empty and rules are off
            (default: an HTTP 500 "script exhausted").
        models: model id -> context length listed by ``/v1/models``.
        rule_latency: seconds before the first byte of every rule-mode reply.
    """
    state = ScriptState(rule_mode=rule_mode, rule_latency=rule_latency)
    if default is not None:
        state.default = default if isinstance(default, Step) else parse_steps(default)[0]
    if models is not None:
        state.models = dict(models)
    server = ScriptedProvider(state, "")
    server.push(*(steps or ()))
    config = Config()
    config.bind = [f"{host}:{port}"]
    config.accesslog = None
    config.errorlog = logging.getLogger("providers.scripted.hypercorn")
    config.graceful_timeout = 0.1
    async with trio.open_nursery() as nursery:
        binds = await nursery.start(serve, ScriptedProviderApp(state), config)
        server.base_url = binds[0] + "/v1"
        try:
            yield server
        finally:
            nursery.cancel_scope.cancel()
