"""What the HTTP handlers ask of the daemon: admission under the caps, sessions
(ephemeral or named), sending a turn and watching it, and cleaning up.

The API owns the sessions it creates and reaches no other. A client's session
name (``X-Hermes-Session-Id``, a run's ``session_id``) is never used as a
session id: it maps to ``api-`` and 32 hex digits of its SHA-256
(:func:`api_session_id`), an id space no CLI, cron or subagent session is ever
given (theirs are 12 random hex digits). So a name that happens to be a CLI
session's id names a new API session, answered exactly as any unknown name
is, and the same name finds the same session after a restart. A session found
under a derived id is also checked to come from the API before it is used.

Session-layer errors are translated into API errors here, once.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

import trio

from actors import ActorError
from actors.platform.api.errors import ApiError, NotFound, TooManyRuns
from actors.platform.api.firsts import FirstTokens
from actors.platform.api.turns import TurnWatch, baseline_usage
from actors.platform.api.wire import TurnUsage
from actors.session import SessionBusy, SessionNotFound, SessionOptions, SessionService, TooManyRunningTurns
from config.api import ApiServerConfig
from messages.chat import ChatMessage
from messages.session import Interrupt, Subscribe
from store.errors import SessionNotFoundError
from store.protocol import SessionInfo

__all__ = ["API_SOURCE", "API_TOOLSETS", "Admission", "ApiGateway", "KeyedLocks", "api_session_id"]

log = logging.getLogger("hermes_actors.api")

#: The toolsets API sessions get: the core tools, nothing that needs a person at a terminal.
API_TOOLSETS = ("hermes-api",)
#: How long cleaning up an abandoned ephemeral session may take (shielded).
DISCARD_SECONDS = 5.0
#: The ``source`` of every session the API creates; the only one it will reach.
API_SOURCE = "api"
_NAMED_PREFIX = "api-"


def api_session_id(name: str) -> str:
    """The id of the API session a client calls ``name`` (the API's own namespace, stable across restarts)."""
    return _NAMED_PREFIX + hashlib.sha256(name.encode("utf-8")).hexdigest()[:32]


class KeyedLocks:
    """A lock per key, forgotten once nobody holds or waits for it (so a named session is created once)."""

    def __init__(self) -> None:
        self._locks: dict[str, trio.Lock] = {}

    @asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        """Hold ``key``'s lock for the block."""
        lock = self._locks.setdefault(key, trio.Lock())
        try:
            async with lock:
                yield
        finally:
            if not lock.statistics().tasks_waiting and not lock.locked():
                self._locks.pop(key, None)


class Admission:
    """One admitted completion or run; :meth:`release` gives its slot back (idempotent)."""

    def __init__(self, gateway: ApiGateway) -> None:
        self._gateway: ApiGateway | None = gateway

    def release(self) -> None:
        """Free the slot."""
        if self._gateway is not None:
            self._gateway.in_flight -= 1
            self._gateway = None


class ApiGateway:
    """The API's view of the sessions service.

    Args:
        sessions: the daemon's session service.
        config: the ``platforms.api_server`` section.
        daemon_cap: ``daemon.max_running_turns`` (counted together with the API's own cap).
        cwd: the directory API sessions work in.
        firsts: the order completions' work runs in (a gate of its own when not given).
    """

    def __init__(
        self, sessions: SessionService, config: ApiServerConfig, daemon_cap: int, cwd: str, firsts: FirstTokens | None = None
    ) -> None:
        self.sessions = sessions
        self.config = config
        self.daemon_cap = daemon_cap
        self.cwd = cwd
        # Invariant: in_flight counts unreleased Admissions.
        self.in_flight = 0
        #: The order completions' work runs in: first tokens before tails.
        self.firsts = firsts or FirstTokens()
        self._creating = KeyedLocks()

    async def admit(self) -> Admission:
        """A slot for one completion or run.

        Raises:
            TooManyRuns: ``max_concurrent_runs`` are in flight, or the daemon's running-turn cap is reached.
        """
        cap = self.config.max_concurrent_runs
        if self.in_flight >= cap:
            raise TooManyRuns(f"Too many concurrent runs (max {cap})")
        # Taken before asking the sessions (a checkpoint), so two requests cannot both pass the check above.
        admission = Admission(self)
        self.in_flight += 1
        try:
            if not await self.sessions.admits_turn(cap=self.daemon_cap):
                raise TooManyRuns(f"Too many concurrent runs (max {self.daemon_cap})")
        except BaseException:
            admission.release()
            raise
        return admission

    def _options(self, *, interactive: bool, model: str | None) -> SessionOptions:
        return SessionOptions(
            cwd=self.cwd, model=model, source=API_SOURCE, interactive=interactive, toolsets=API_TOOLSETS,
            sandbox=self.config.sandbox, limits=self.config.limits,
        )

    async def open_ephemeral(
        self, system: str | None, *, interactive: bool = False, model: str | None = None,
        seed: Sequence[ChatMessage] | None = None, light: bool = False,
    ) -> str:
        """A fresh session for one request; ``system`` is its ephemeral layer (never stored),
        ``seed`` the earlier turns it starts with; ``light``: stored only when it needs to be, at
        the latest as it stops (a completion's; see ``SessionSpec.ephemeral``)."""
        return await self.sessions.create_session(
            self._options(interactive=interactive, model=model), ephemeral_system=system, seed=seed, ephemeral=light
        )

    async def open_named(self, name: str, system: str | None, *, interactive: bool = False) -> str:
        """The id of the API session the client calls ``name``, created (with ``system`` as its
        ephemeral layer) when absent.

        Raises:
            NotFound: the id is taken by a session the API did not create (answered as for an unknown session).
        """
        session_id = api_session_id(name)
        async with self._creating.hold(session_id):
            try:
                await self.sessions.get(session_id)
            except SessionNotFound:
                await self.sessions.create_session(
                    self._options(interactive=interactive, model=None), session_id=session_id, ephemeral_system=system
                )
            else:
                await self._check_owned(name, session_id)
        return session_id

    async def _check_owned(self, name: str, session_id: str) -> SessionInfo:
        try:
            info = await self.sessions.deps.store.get_session(session_id)
        except SessionNotFoundError as exc:
            raise NotFound(f"no session {name!r}") from exc
        if info.source != API_SOURCE:
            log.warning("api: session %s (for name %r) has source %r, not the API's; refused", session_id, name, info.source)
            raise NotFound(f"no session {name!r}")
        return info

    async def named_session(self, name: str) -> SessionInfo:
        """The stored record of the API session the client calls ``name``.

        Raises:
            NotFound: there is none, or the id is a session the API did not create.
        """
        return await self._check_owned(name, api_session_id(name))

    async def start_turn(self, session_id: str, text: str, label: str, *, fresh: bool = False) -> TurnWatch:
        """Subscribe to the session, then send ``text`` (queued behind a running turn, never interrupting it).

        ``fresh``: the session was opened for this request and has used no tokens yet (its snapshot,
        which the usage so far is read from otherwise, is not needed), and it has just started: its
        handle is taken from the registry, not asked of the sessions supervisor (which would first ask
        whether it is being hibernated, as a session idle for minutes may be).

        Raises:
            NotFound: the session is gone.
            TooManyRuns: the daemon's running-turn cap, or the session's queue, is full.
        """
        try:
            handle = (self.sessions.live(session_id) if fresh else None) or await self.sessions.get(session_id)
            subscription = await handle.ask(Subscribe(label))
        except SessionNotFound as exc:
            raise NotFound(f"no session {session_id!r}") from exc
        except ActorError as exc:
            raise ApiError(f"session {session_id} is not available: {exc}") from exc
        try:
            baseline = TurnUsage(0, 0) if fresh else baseline_usage(handle.statistics().details)
            status = await self.sessions.send(session_id, text, source="api", busy_mode="queue", handle=handle)
        except BaseException as exc:
            subscription.close()
            if isinstance(exc, TooManyRunningTurns):
                raise TooManyRuns(f"Too many concurrent runs (max {self.daemon_cap})") from exc
            if isinstance(exc, SessionBusy):
                raise TooManyRuns(str(exc)) from exc
            if isinstance(exc, SessionNotFound):
                raise NotFound(f"no session {session_id!r}") from exc
            raise
        return TurnWatch(session_id, subscription, text, baseline, status)

    async def interrupt(self, session_id: str, requested_by: str) -> None:
        """Interrupt the session's running turn (if it is still alive)."""
        handle = self.sessions.live(session_id)
        if handle is not None:
            await handle.tell(Interrupt(requested_by=requested_by))

    async def discard(self, session_id: str, reason: str) -> None:
        """End an ephemeral session (its turn, if running, is cancelled); shielded and bounded."""
        with trio.move_on_after(DISCARD_SECONDS, shield=True) as scope:
            try:
                await self.sessions.close_session(session_id, reason)
            except (SessionNotFound, ActorError) as exc:
                log.warning("api: closing ephemeral session %s: %s", session_id, exc)
        if scope.cancelled_caught:
            log.error("api: closing ephemeral session %s took over %.0f s", session_id, DISCARD_SECONDS)
