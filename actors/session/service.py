"""The ``sessions`` supervisor and the service the daemon's front doors use.

Sessions are dynamic children (``sessions/session:<id>``), restarted from the
store after a crash, given up alone when they flap (per-child intensity). An
idle session with no subscriber, no queued message, no pending request and no
live background process hibernates after ``daemon.hibernate_after_seconds``:
its actor stops and its state lives in the store until the next message or
attach wakes it, transparently.
"""

from __future__ import annotations

import logging
from typing import Any

import trio

from actors.errors import ActorError, ActorNotFound
from actors.handle import ActorHandle
from actors.registry import ActorRegistry
from actors.session.actor import SessionActor
from actors.session.options import DelegateFactory, SessionDeps, SessionOptions, SessionSpec
from actors.session.state import new_session_id
from config.daemon import DaemonConfig
from messages.session import SessionMessage, UserMessage
from store.errors import SessionNotFoundError
from tools.jail.policy import resolve_mode
from supervisor import ChildSpec, RestartType, Supervisor, SupervisorHandle

__all__ = ["SessionNotFound", "SessionService", "SessionsSupervisor", "TooManyRunningTurns", "session_child_name"]

log = logging.getLogger("hermes_actors.sessions")


class SessionNotFound(LookupError):
    """No session with that id, live or stored."""


class TooManyRunningTurns(RuntimeError):
    """The daemon's cap on concurrently running turns is reached."""


def session_child_name(session_id: str) -> str:
    """The child name (and path segment) of a session."""
    return f"session:{session_id}"


class SessionsSupervisor(Supervisor):
    """Supervises every session and hibernates the idle ones."""

    def __init__(self, hibernate_after: float) -> None:
        super().__init__(kind="sessions", max_restarts=3, period=60.0, per_child_intensity=True)
        self.hibernate_after = hibernate_after
        self.hibernated = 0

    async def main(self) -> None:
        assert self._nursery is not None
        self._nursery.start_soon(self._hibernate_loop)
        await super().main()

    def snapshot_details(self) -> dict[str, Any]:
        return {**super().snapshot_details(), "hibernated": self.hibernated}

    async def _hibernate_loop(self) -> None:
        interval = max(min(self.hibernate_after / 4, 30.0), 0.05)
        while True:
            await trio.sleep(interval)
            now = trio.current_time()
            for actor in self.children():
                if isinstance(actor, SessionActor) and actor.hibernatable and now - actor.last_active >= self.hibernate_after:
                    await self.ref.terminate_child(actor.name, "hibernating (idle)", requested_by=self.path)
                    self.hibernated += 1
                    log.info("session %s hibernated", actor.session_id)


class _SessionFactory:
    """Builds a session actor: new the first time, restored from the store after that."""

    def __init__(
        self, service: SessionService, session_id: str, options: SessionOptions | None,
        ephemeral_system: str | None, seed: list[dict[str, Any]] | None = None,
    ) -> None:
        self.service = service
        self.session_id = session_id
        self.options = options
        self.ephemeral_system = ephemeral_system
        self.seed = seed

    def __call__(self) -> SessionActor:
        options, self.options = self.options, None
        seed, self.seed = self.seed, None
        return SessionActor(self.service.setup_for(self.session_id, options, self.ephemeral_system, seed))


class SessionService:
    """Create, find, wake, message and close sessions.

    Args:
        deps: what every session shares.
        sessions: the handle of the ``sessions`` supervisor.
        registry: the actor registry (to find live sessions by path).
        config: the ``daemon`` section (caps, replay sizes).
        delegate_factory: builds a session's delegate_task capability, if offered.
    """

    def __init__(
        self,
        deps: SessionDeps,
        sessions: SupervisorHandle,
        registry: ActorRegistry,
        config: DaemonConfig,
        delegate_factory: DelegateFactory | None = None,
    ) -> None:
        self.deps = deps
        self.sessions = sessions
        self.registry = registry
        self.config = config
        self.delegate_factory = delegate_factory
        self._waking: dict[str, trio.Event] = {}

    def setup_for(
        self, session_id: str, options: SessionOptions | None, ephemeral_system: str | None = None,
        seed: list[dict[str, Any]] | None = None,
    ) -> SessionSpec:
        """The spec of a new (options given) or restored (None) session."""
        return SessionSpec(
            self.deps, session_id, options, ephemeral_system=ephemeral_system, seed=tuple(seed or ()),
            delegate=self.delegate_factory, replay_size=self.config.event_replay_size,
            subscriber_capacity=self.config.subscriber_buffer,
        )

    def _path(self, session_id: str) -> str:
        return f"{self.sessions.path}/{session_child_name(session_id)}".lstrip("/")

    async def create_session(
        self, options: SessionOptions, *, session_id: str | None = None, ephemeral_system: str | None = None,
        seed: list[dict[str, Any]] | None = None,
    ) -> str:
        """Start a new session and return its id; ``seed`` are earlier turns it starts with.

        Raises:
            SandboxModeRefused: ``options.sandbox`` is unknown or wider than ``sandbox.max_mode``
                (checked before anything starts, for every front door).
        """
        resolve_mode(options.sandbox, self.deps.config.sandbox)
        session_id = session_id or new_session_id()
        factory = _SessionFactory(self, session_id, options, ephemeral_system, seed)
        await self.sessions.start_child(
            ChildSpec(session_child_name(session_id), factory, RestartType.TRANSIENT, shutdown_timeout=SessionActor.shutdown_timeout)
        )
        return session_id

    def live(self, session_id: str) -> ActorHandle[SessionMessage] | None:
        """The running session, or None (hibernated, stopped or unknown)."""
        try:
            return self.registry.lookup(self._path(session_id))
        except ActorNotFound:
            return None

    async def get(self, session_id: str) -> ActorHandle[SessionMessage]:
        """The session's handle, waking it from the store when it is not running.

        Raises:
            SessionNotFound: no such session, live or stored.
        """
        handle = self.live(session_id)
        if handle is not None:
            return handle
        waking = self._waking.get(session_id)
        if waking is not None:  # another caller is already loading it
            await waking.wait()
            return await self.get(session_id)
        self._waking[session_id] = event = trio.Event()
        try:
            try:
                await self.deps.store.get_session(session_id)
            except SessionNotFoundError as exc:
                raise SessionNotFound(f"no session {session_id!r}") from exc
            factory = _SessionFactory(self, session_id, None, None)
            try:
                return await self.sessions.start_child(
                    ChildSpec(session_child_name(session_id), factory, RestartType.TRANSIENT, shutdown_timeout=SessionActor.shutdown_timeout)
                )
            except ActorError:
                live = self.live(session_id)
                if live is None:
                    raise
                return live
        finally:
            del self._waking[session_id]
            event.set()

    def running_turns(self) -> int:
        """Sessions with a turn in progress right now."""
        prefix = f"{self.sessions.path}/session:"
        depth = prefix.count("/") + 1
        return sum(1 for path in self.registry.paths() if path.startswith(prefix) and path.endswith("/turn") and path.count("/") == depth)

    async def send(self, session_id: str, text: str, *, source: str = "cli", busy_mode: str | None = None) -> str:
        """Deliver a user message (starting a turn, or per busy_input_mode; ``busy_mode`` overrides it).

        Raises:
            SessionNotFound: no such session.
            TooManyRunningTurns: the daemon's running-turn cap is reached.
        """
        handle = await self.get(session_id)
        if not self._turn_running(session_id) and self.running_turns() >= self.config.max_running_turns:
            raise TooManyRunningTurns(
                f"busy: {self.config.max_running_turns} turns are already running (daemon.max_running_turns); try again shortly"
            )
        return await handle.ask(UserMessage(text, source=source, busy_mode=busy_mode))

    def _turn_running(self, session_id: str) -> bool:
        return f"{self._path(session_id)}/turn" in self.registry

    async def close_session(self, session_id: str, reason: str) -> None:
        """Stop a session and mark it ended in the store (it can still be read)."""
        await self.sessions.terminate_child(session_child_name(session_id), reason)
        try:
            await self.deps.store.end_session(session_id, reason)
        except SessionNotFoundError as exc:
            raise SessionNotFound(f"no session {session_id!r}") from exc
