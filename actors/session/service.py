"""The ``sessions`` supervisor and the service the daemon's front doors use.

Sessions are dynamic children (``sessions/session:<id>``), restarted from the
store after a crash, given up alone when they flap (per-child intensity). An
idle session with no subscriber, no queued message, no pending request and no
live background process hibernates after ``daemon.hibernate_after_seconds``:
its actor stops and its state lives in the store until the next message or
attach wakes it, transparently.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

import logging
from typing import Any, TypeGuard, TypeVar

import attrs
import trio

from actors import Actor, ActorBase, ActorError, ActorHandle, ActorNotFound, ActorRegistry, MailboxClosed, NoReply
from supervisor import ChildSpec, RestartType, Supervisor, SupervisorHandle
from actors.session.actor import SessionActor
from actors.session.model import SessionModel
from actors.session.options import (
    DelegateFactory,
    SessionDeps,
    SessionOptions,
    SessionSpec,
)
from actors.session.state import new_session_id
from config.daemon import DaemonConfig
from messages.chat import ChatMessage
from messages.paths import SESSIONS, child_path, session_id_of, session_name
from messages.request import Request
from messages.session import Hibernate, SessionMessage, Shutdown, UserMessage
from store.errors import SessionNotFoundError, SessionOwnedElsewhere
from tools.jail.policy import resolve_limits, resolve_mode

__all__ = ["TURN_NAME", "SessionNotFound", "SessionService", "SessionsHandle", "SessionsSupervisor", "TooManyRunningTurns"]

log = logging.getLogger("hermes_actors.sessions")

#: The type of a reply, named by the request asked (:class:`~messages.request.Request`).
R = TypeVar("R")

# How long the sweep waits for a session to say whether it may hibernate (one busy just now: next sweep).
HIBERNATE_ANSWER_SECONDS = 5.0
#: The name of a session's running turn in the tree (``sessions/session:<id>/turn``).
TURN_NAME = "turn"


class SessionNotFound(LookupError):
    """No session with that id, live or stored."""


class TooManyRunningTurns(RuntimeError):
    """The daemon's cap on concurrently running turns is reached."""


@attrs.frozen
class SessionsInTurns(Request[frozenset[str]]):
    """Ask the sessions supervisor which of its sessions run a turn now; the reply is a frozenset of ids."""


@attrs.frozen
class TurnAdmission(Request[bool]):
    """Ask whether ``session_id`` (None: a session not started yet) may start a turn under a cap of ``cap``
    running turns: True when it runs one already (its message waits for it) or fewer than ``cap`` run."""

    session_id: str | None
    cap: int


@attrs.frozen
class LiveSessions(Request[frozenset[str]]):
    """Ask the sessions supervisor for the ids of its live sessions; the reply is a frozenset."""


@attrs.frozen
class Hibernation(Request["trio.Event | None"]):
    """Ask whether ``session_id`` is being hibernated now; the reply is an event set once it is gone, or None."""

    session_id: str


#: What the sessions supervisor answers besides a supervisor's own requests.
SessionsQuery = SessionsInTurns | TurnAdmission | LiveSessions | Hibernation


class SessionsHandle(SupervisorHandle):
    """The ``sessions`` supervisor's handle: adds what the supervisor says about its sessions.

    Each answer is asked of the supervisor (in mailbox order), never read from it.
    """

    __slots__ = ()

    async def sessions_in_turns(self) -> frozenset[str]:
        """The ids of the sessions with a turn in progress right now."""
        return await self._query(SessionsInTurns())

    async def admits_turn(self, session_id: str | None, cap: int) -> bool:
        """Whether ``session_id`` may start a turn under a cap of ``cap`` running turns (see :class:`TurnAdmission`)."""
        return await self._query(TurnAdmission(session_id, cap))

    async def live_ids(self) -> frozenset[str]:
        """The ids of the live sessions."""
        return await self._query(LiveSessions())

    async def hibernating(self, session_id: str) -> bool:
        """True while ``session_id`` is being hibernated."""
        return await self._query(Hibernation(session_id)) is not None

    async def wait_hibernated(self, session_id: str) -> None:
        """Return once ``session_id`` is no longer being hibernated (at once when it is not)."""
        gone = await self._query(Hibernation(session_id))
        if gone is not None:
            await gone.wait()

    async def _query(self, query: Request[R]) -> R:
        # The handle is typed for a supervisor's requests; the sessions supervisor takes these (SessionsQuery) as well.
        return await self.ask(query)


def _has_turn(session: ActorBase) -> TypeGuard[SessionActor]:
    # The session's own view (set when it starts a turn, cleared when the turn is finished): an
    # attribute read, where listing every session's children on each message cost O(sessions x actors).
    return isinstance(session, SessionActor) and session.turn is not None


class SessionsSupervisor(Supervisor):
    """Supervises every session and hibernates the idle ones."""

    def __init__(self, hibernate_after: float) -> None:
        super().__init__(kind="sessions", max_restarts=3, period=60.0, per_child_intensity=True)
        self.ref = SessionsHandle(self)
        self.hibernate_after = hibernate_after
        self.hibernated = 0
        # Sessions being hibernated now, each with an event set once it is gone: a lookup in
        # that window must wait and wake it from the store, not hand out a closing handle.
        self.hibernating: dict[str, trio.Event] = {}
        # Set when a session may have become quiet: the sweep looks at once instead of at its next deadline,
        # at the sessions that said so (the others are looked at by the deadline).
        self._stirred = trio.Event()
        self._stirred_sessions: set[SessionActor] = set()
        # When the sweep looks at every session next (inf: no such look is set, or the sweep is at work).
        self._deadline = math.inf
        # The sessions that said their turn started and not yet that it was put away: a count of the running
        # turns that is never low (one that stopped without saying so stays until the exact count prunes it).
        self._turns: set[SessionActor] = set()

    async def main(self) -> None:
        self.start_soon(self._hibernate_loop)
        await super().main()

    def snapshot_details(self) -> dict[str, Any]:
        return {**super().snapshot_details(), "hibernated": self.hibernated}

    async def handle(self, message: Any) -> Any:
        if isinstance(message, SessionsInTurns):
            return frozenset(session.session_id for session in self.children() if _has_turn(session))
        if isinstance(message, TurnAdmission):
            return self._admits_turn(message.session_id, message.cap)
        if isinstance(message, LiveSessions):
            return frozenset(sid for session in self.children() if (sid := session_id_of(session.path)) is not None)
        if isinstance(message, Hibernation):
            return self.hibernating.get(message.session_id)
        return await super().handle(message)

    async def _start_child(
        self, child: Actor[Any], name: str, runner: Callable[..., Awaitable[None]]
    ) -> ActorHandle[Any]:
        if isinstance(child, SessionActor):
            child.on_quiet = functools.partial(self._stirred_by, child)
            child.on_turn = functools.partial(self._turn_changed, child)
        return await super()._start_child(child, name, runner)

    def _turn_changed(self, session: SessionActor, running: bool) -> None:
        if running:
            self._turns.add(session)
        else:
            self._turns.discard(session)

    def _admits_turn(self, session_id: str | None, cap: int) -> bool:
        # Below the cap by the running count, the answer needs no look at the sessions: that count is never
        # low. At the cap, the exact answer from the live sessions' own view, and the count pruned to it.
        if len(self._turns) < cap:
            return True
        self._turns = {session for session in self.children() if _has_turn(session)}
        return len(self._turns) < cap or any(session.session_id == session_id for session in self._turns)

    def _stirred_by(self, session: SessionActor) -> None:
        # A session that just became quiet is due one idle period from now at the soonest, never before
        # a full look already set (that deadline is at most one idle period after the look that set it,
        # and every session is looked at then): the sweep is woken only when no full look is set, or
        # for a one-shot session, which goes at once. A busy daemon's sessions stir several times a
        # request; waking the sweep each time cost the event loop steps for nothing.
        if self._deadline < math.inf and not session.durable.options.one_shot:
            return
        self._stirred_sessions.add(session)
        self._stirred.set()

    async def _hibernate_loop(self) -> None:
        # No tick: the sweep sleeps until the earliest moment a session could be due, or until a session
        # says it may have become quiet (a turn ended, a subscriber left), so a one-shot session that is
        # done with goes at once and an idle daemon does nothing at all. Woken by sessions, it looks at
        # those alone: a busy daemon's sessions stir several times a request each, and looking at all of
        # them every time cost O(sessions) a stir. Every session is looked at when the deadline comes.
        next_look = math.inf
        while True:
            self._stirred = trio.Event()
            self._deadline = math.inf
            now = trio.current_time()
            if now >= next_look:
                next_look = math.inf
                sessions = self.children()
                self._stirred_sessions.clear()
            else:
                sessions = list(self._stirred_sessions)
                self._stirred_sessions.clear()
            for actor in sessions:
                if not isinstance(actor, SessionActor) or actor.stopped:
                    continue
                if actor.done_with or (actor.hibernatable and now - actor.last_active >= self.hibernate_after):
                    await self._hibernate(actor)
                elif actor.hibernatable:
                    next_look = min(next_look, actor.last_active + self.hibernate_after)
                else:
                    # Busy now: what ends it mostly says so (on_quiet); what does not (a background
                    # process ending) is noticed one idle period from now, which is still idle time.
                    next_look = min(next_look, now + self.hibernate_after)
            self._deadline = next_look
            with trio.move_on_at(next_look):
                await self._stirred.wait()

    async def _hibernate(self, actor: SessionActor) -> None:
        # Marked in the same step as the check above (no checkpoint between): a lookup after it
        # waits for the session to go, then wakes it anew.
        self.hibernating[actor.session_id] = gone = trio.Event()
        # Counted before the session leaves the live table: whoever sees it gone sees it counted.
        self.hibernated += 1
        try:
            # The session has the last word, in mailbox order: a client that found it before the
            # mark and subscribed (or sent a message) meanwhile keeps it awake.
            agreed = False
            with trio.move_on_after(HIBERNATE_ANSWER_SECONDS):
                with contextlib.suppress(MailboxClosed, NoReply):
                    agreed = await actor.ref.ask(Hibernate())
            if agreed:
                # It is ending (its mailbox closed); the supervisor forgets its slot now, so the id can
                # be woken at once, whether or not the session has finished by then.
                await self.ref.terminate_child(actor.name, "hibernating (idle)", requested_by=self.path)
                log.info("session %s hibernated", actor.session_id)
            else:
                self.hibernated -= 1  # busy again, or closed by someone else meanwhile: not a hibernation
        finally:
            del self.hibernating[actor.session_id]
            gone.set()


class _SessionFactory:
    """Builds a session actor: new the first time, restored from the store after that."""

    def __init__(
        self, service: SessionService, session_id: str, options: SessionOptions | None,
        ephemeral_system: str | None, seed: Sequence[ChatMessage] | None = None, *, ephemeral: bool = False,
    ) -> None:
        self.service = service
        self.session_id = session_id
        self.options = options
        self.ephemeral_system = ephemeral_system
        self.seed = seed
        self.ephemeral = ephemeral

    def __call__(self) -> SessionActor:
        options, self.options = self.options, None
        seed, self.seed = self.seed, None
        spec = self.service.setup_for(self.session_id, options, self.ephemeral_system, seed, ephemeral=self.ephemeral)
        return SessionActor(spec)


class SessionService:
    """Create, find, wake, message and close sessions: the one way the front doors (the control
    server and the HTTP API) reach sessions.

    Args:
        deps: what every session shares.
        registry: the actor registry (to find live sessions, and the sessions supervisor, by path).
        config: the ``daemon`` section (caps, replay sizes).
        delegate_factory: builds a session's delegate_task capability, if offered.
        supervisor: the path of the :class:`SessionsSupervisor` the sessions run under.
        refresh_deps: given the deps in use, those a new session should get (the daemon re-reads its
            configuration files there when they changed); None: ``deps`` never change.
    """

    def __init__(
        self,
        deps: SessionDeps,
        registry: ActorRegistry,
        config: DaemonConfig,
        *,
        delegate_factory: DelegateFactory | None = None,
        supervisor: str = SESSIONS,
        refresh_deps: Callable[[SessionDeps], Awaitable[SessionDeps]] | None = None,
    ) -> None:
        self.deps = deps
        self._refresh_deps = refresh_deps
        self.registry = registry
        self.config = config
        self.delegate_factory = delegate_factory
        self.supervisor = supervisor
        self._waking: dict[str, trio.Event] = {}
        # Ephemeral sessions started here and not closed yet: each records its own end when it stops.
        self._ephemeral: set[str] = set()

    def setup_for(
        self, session_id: str, options: SessionOptions | None, ephemeral_system: str | None = None,
        seed: Sequence[ChatMessage] | None = None, *, ephemeral: bool = False,
    ) -> SessionSpec:
        """The spec of a new (options given) or restored (None) session; ``ephemeral``: see ``SessionSpec``."""
        return SessionSpec(
            self.deps, session_id, options, ephemeral_system=ephemeral_system, seed=tuple(seed or ()),
            delegate=self.delegate_factory, replay_size=self.config.event_replay_size,
            subscriber_capacity=self.config.subscriber_buffer, ephemeral=ephemeral,
        )

    def _sessions(self) -> SessionsHandle:
        """The sessions supervisor running now (its parent restarts it with a fresh instance, so a
        handle taken once could point at a dead one).

        Raises:
            ActorNotFound: no sessions supervisor is running at :attr:`supervisor`.
        """
        handle = self.registry.lookup(self.supervisor)
        if not isinstance(handle, SessionsHandle):
            raise ActorNotFound(self.supervisor, "is not a sessions supervisor")
        return handle

    def _spec(self, session_id: str, factory: _SessionFactory) -> ChildSpec:
        return ChildSpec(session_name(session_id), factory, RestartType.TRANSIENT, shutdown_timeout=SessionActor.shutdown_timeout)

    async def create_session(
        self, options: SessionOptions, *, session_id: str | None = None, ephemeral_system: str | None = None,
        seed: Sequence[ChatMessage] | None = None, ephemeral: bool = False,
    ) -> str:
        """Start a new session and return its id; ``seed`` are earlier turns it starts with;
        ``ephemeral``: one request's session, stored when it needs to be (see ``SessionSpec``).

        Raises:
            SandboxModeRefused: ``options.sandbox`` is unknown or wider than ``sandbox.max_mode``, or
                ``options.limits`` names an unknown limit or a bad value (checked before anything
                starts, for every front door).
            MissingProviderKey: the session's provider needs a key that is not set.
        """
        await self.refresh_deps()
        resolve_mode(options.sandbox, self.deps.config.sandbox)
        resolve_limits(options.limits, self.deps.config.sandbox)
        if self.deps.keys is not None:
            self.deps.keys.require(SessionModel(self.deps, options).chain.current)
        session_id = session_id or new_session_id()
        factory = _SessionFactory(self, session_id, options, ephemeral_system, seed, ephemeral=ephemeral)
        if ephemeral:
            self._ephemeral.add(session_id)
        try:
            await self._sessions().start_child(self._spec(session_id, factory))
        except BaseException:
            self._ephemeral.discard(session_id)
            raise
        return session_id

    async def refresh_deps(self) -> None:
        """Take the deps a new session should get now (the configuration as its files say)."""
        if self._refresh_deps is not None:
            self.deps = await self._refresh_deps(self.deps)

    def live(self, session_id: str) -> ActorHandle[SessionMessage] | None:
        """The running session, or None (hibernated, stopped or unknown)."""
        try:
            return self.registry.lookup(child_path(self.supervisor, session_name(session_id)))
        except ActorNotFound:
            return None

    async def get(self, session_id: str) -> ActorHandle[SessionMessage]:
        """The session's handle, waking it from the store when it is not running.

        Raises:
            SessionNotFound: no such session, live or stored.
            SessionOwnedElsewhere: another host runs it (the database is shared).
        """
        with contextlib.suppress(ActorNotFound):
            # Going to the store right now: wait, then wake it from there.
            await self._sessions().wait_hibernated(session_id)
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
                return await self._sessions().start_child(self._spec(session_id, factory))
            except ActorError as exc:
                live = self.live(session_id)
                if live is not None:
                    return live
                if isinstance(exc.__cause__, SessionOwnedElsewhere):
                    raise exc.__cause__ from None
                raise
        finally:
            del self._waking[session_id]
            event.set()

    async def running_turns(self) -> int:
        """Sessions with a turn in progress right now (none while no sessions supervisor runs)."""
        return len(await self._sessions_in_turns())

    async def turn_running(self, session_id: str) -> bool:
        """True while the session has a turn in progress."""
        return session_id in await self._sessions_in_turns()

    async def live_ids(self) -> frozenset[str]:
        """The ids of the live sessions (none while no sessions supervisor runs)."""
        try:
            return await self._sessions().live_ids()
        except (ActorNotFound, MailboxClosed):
            return frozenset()

    def is_live(self, session_id: str) -> bool:
        """True while the session runs here (a registry lookup: no need to list them all)."""
        return self.live(session_id) is not None

    async def admits_turn(self, session_id: str | None = None, cap: int | None = None) -> bool:
        """Whether ``session_id`` (None: a session about to be made) may start a turn now: it runs one already,
        or fewer than ``cap`` (default ``daemon.max_running_turns``) turns run. Asks the sessions supervisor
        for its running count, without listing the sessions (True while no sessions supervisor runs)."""
        try:
            return await self._sessions().admits_turn(session_id, self.config.max_running_turns if cap is None else cap)
        except (ActorNotFound, MailboxClosed):
            return True

    async def _sessions_in_turns(self) -> frozenset[str]:
        try:
            return await self._sessions().sessions_in_turns()
        except (ActorNotFound, MailboxClosed):
            return frozenset()

    async def send(
        self, session_id: str, text: str, *, source: str = "cli", busy_mode: str | None = None, images: tuple[str, ...] = (),
        system: str | None = None,
        handle: ActorHandle[SessionMessage] | None = None,
    ) -> str:
        """Deliver a user message (starting a turn, or per busy_input_mode; ``busy_mode`` overrides it).

        ``images`` are host paths of images the user sent, shown to a model that can see them; ``system`` is
        added to the system prompt of the turn it starts, that turn only (a chat's ``channel_prompts``).
        ``handle``: the session's, just taken from :meth:`get` by the caller (not looked up again).

        Raises:
            SessionNotFound: no such session.
            TooManyRunningTurns: the daemon's running-turn cap is reached.
        """
        if handle is None:
            handle = await self.get(session_id)
        if not await self.admits_turn(session_id):
            raise TooManyRunningTurns(
                f"busy: {self.config.max_running_turns} turns are already running (daemon.max_running_turns); try again shortly"
            )
        # The handle found above: a second lookup would ask the supervisor again for the same answer.
        return await self._ask_handle(session_id, handle, UserMessage(text, source=source, busy_mode=busy_mode, images=images, system=system))

    async def ask(self, session_id: str, message: Request[R]) -> R:
        """Ask the session ``message`` (waking it from the store), once more if it was hibernating
        when asked: its mailbox closed just before, so the next lookup wakes it anew.

        Raises:
            SessionNotFound, SessionOwnedElsewhere; ActorError: the session failed to answer.
        """
        return await self._ask_handle(session_id, await self.get(session_id), message)

    async def _ask_handle(self, session_id: str, handle: ActorHandle[SessionMessage], message: Request[R]) -> R:
        """:meth:`ask` of a handle already found."""
        try:
            return await handle.ask(message)
        except MailboxClosed:
            if self.live(session_id) is handle and not await self._sessions().hibernating(session_id):
                raise
            return await (await self.get(session_id)).ask(message)

    async def close_session(self, session_id: str, reason: str) -> None:
        """Stop a session and mark it ended in the store (it can still be read).

        A live session is sent :class:`~messages.session.Shutdown`: its running turn is stopped
        and recorded like an interrupt, then the session ends and commits.
        """
        handle = self.live(session_id)
        if handle is not None:
            # Past this bound terminate_child below cancels it, as it would any stubborn child.
            with trio.move_on_after(SessionActor.shutdown_timeout):
                try:
                    await handle.ask(Shutdown(reason))
                except (MailboxClosed, NoReply):
                    pass  # it is stopping already
                await handle.wait_stopped()
        # The supervisor forgets the slot now, not when it hears of the exit: the id may be woken at once.
        await self._sessions().terminate_child(session_name(session_id), reason)
        if session_id in self._ephemeral:
            self._ephemeral.discard(session_id)
            return  # it recorded its own end as it stopped
        try:
            await self.deps.store.end_session(session_id, reason)
        except SessionNotFoundError as exc:
            raise SessionNotFound(f"no session {session_id!r}") from exc

    async def evict(self, session_ids: list[str], reason: str) -> None:
        """Stop running these sessions on this host, leaving them live in the store (their leases
        were lost: another host may run them now)."""
        try:
            sessions = self._sessions()
        except ActorNotFound:
            return
        for session_id in session_ids:
            if self.live(session_id) is not None:
                await sessions.terminate_child(session_name(session_id), reason, requested_by="leases")

    @contextlib.asynccontextmanager
    async def exclusive(self, session_id: str) -> AsyncIterator[None]:
        """Hold the lease of a session that is not live here for the block: no host can run it
        meanwhile (a delete, say).

        Raises:
            SessionOwnedElsewhere: another host runs it.
            RuntimeError: it is live on this host (its own lease is its session's to give back).
        """
        if self.live(session_id) is not None:
            raise RuntimeError(f"session {session_id} is live here; stop it first")
        leases = self.deps.store.leases
        await leases.acquire(session_id)
        try:
            yield
        finally:
            await leases.release(session_id)
