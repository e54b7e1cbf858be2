"""A real session under test: scripted provider over loopback HTTP, the real
SDK clients, the real tool registry, an in-memory store, an actor system."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from zoneinfo import ZoneInfo
from typing import Any

import attrs
import trio

from actors.platform.daemon.toolbox import build_toolbox
from actors.session import SessionActor, SessionDeps, SessionOptions, SessionSpec, Subscription, new_session_id
from actors.subagent import delegate_capability
from config.loader import Config
from messages.events import SessionEvent, TurnFinished
from messages.session import Subscribe, UserMessage
from providers.clients import ClientPool
from providers.recovery.connector import PooledConnector
from providers.scripted.server import ScriptedProvider, serve_scripted_provider
from store.memory import InMemorySessionStore
from supervisor import ActorSystem, open_actor_system
from supervisor import ChildSpec, RestartType
from tools.context import ShellState
from tools.web import open_web_client


@attrs.define
class Harness:
    """Handles on everything a session test touches."""

    system: ActorSystem
    provider: ScriptedProvider
    deps: SessionDeps
    home: Path
    workdir: Path

    def options(self, api_mode: str = "chat_completions", **options: Any) -> SessionOptions:
        """Options of a session talking to the scripted provider, working in the harness's workdir."""
        return SessionOptions(
            cwd=str(self.workdir), model="scripted-model", provider="custom", base_url=self.provider.base_url,
            api_mode=api_mode, **options,
        )

    def shell(self) -> ShellState:
        """A shell state in the harness's workdir."""
        return ShellState(cwd=str(self.workdir))

    async def spawn_session(self, session_id: str, options: SessionOptions | None) -> Any:
        """Start a session actor (new with ``options``, restored with None) under the root, with delegate_task."""
        config = self.deps.config.delegation
        spec = SessionSpec(self.deps, session_id, options, delegate=lambda parent: delegate_capability(parent, config))
        return await self.system.root.start_child(
            ChildSpec(f"session:{session_id}", lambda: SessionActor(spec), RestartType.TEMPORARY)
        )

    async def start_session(self, api_mode: str = "chat_completions", **options: Any) -> tuple[Any, Subscription, str]:
        """Start a session actor under the root; returns (handle, subscription, session id)."""
        session_id = new_session_id()
        handle = await self.spawn_session(session_id, self.options(api_mode, **options))
        subscription = await handle.ask(Subscribe("test"))
        return handle, subscription, session_id


async def run_turn(handle: Any, subscription: Subscription, text: str) -> tuple[TurnFinished, list[SessionEvent]]:
    """Send ``text`` and collect events until the turn finishes."""
    await handle.tell(UserMessage(text))
    return await collect_turn(subscription)


async def collect_turn(subscription: Subscription) -> tuple[TurnFinished, list[SessionEvent]]:
    """Events up to and including the session's own next TurnFinished (relayed
    subagent events carry the child's session id and path)."""
    events: list[SessionEvent] = []
    async for event in subscription:
        events.append(event)
        if isinstance(event, TurnFinished) and "/subagent:" not in event.path:
            return event, events
    raise AssertionError(f"subscription ended before the turn finished: {events[-3:]}")


@asynccontextmanager
async def open_harness(
    tmp_path: Path, config: Config | None = None, steps: Any = None, provider: Any = None, zone: ZoneInfo | None = None,
    store: InMemorySessionStore | None = None, learning: bool = False,
) -> AsyncIterator[Harness]:
    """Everything a session needs, torn down in order afterwards. ``provider``
    replaces the in-process scripted server (a benchmark runs one out of process); ``zone`` is the user's;
    ``store`` replaces the fresh in-memory store. ``learning`` keeps the background review on: off, it
    never takes a scripted reply meant for a turn."""
    config = config or Config()
    if not learning:
        review = attrs.evolve(config.auxiliary.background_review, enabled=False)
        config = attrs.evolve(config, auxiliary=attrs.evolve(config.auxiliary, background_review=review))
    home = tmp_path / "home"
    workdir = tmp_path / "work"
    home.mkdir()
    workdir.mkdir()
    async with contextlib.AsyncExitStack() as stack:
        if provider is None:
            provider = await stack.enter_async_context(serve_scripted_provider(steps))
        http = await stack.enter_async_context(open_web_client(config.web))
        clients = ClientPool(config.streaming)
        try:
            toolbox = build_toolbox(config, http, environ={})
            deps = SessionDeps(
                config=config, home=home, registry=toolbox.registry,
                connector=PooledConnector(clients, config.streaming, default_key=lambda target: "sk-test-key"),
                store=store if store is not None else InMemorySessionStore(),
                approvals=toolbox.terminal.approvals,
                zone=zone,
            )
            async with open_actor_system() as system:
                yield Harness(system, provider, deps, home, workdir)
            # Structured concurrency's promise, checked: nothing outlives the system.
            assert system.registry.paths() == [], f"actors left registered: {system.registry.paths()}"
        finally:
            with trio.CancelScope(shield=True):
                await clients.aclose()
