"""The control service: turns control requests into actions on the daemon.

One object per daemon, shared by every connection. Each method answers with
one :mod:`messages.control` reply or raises :class:`RequestFailed`, which the
connection sends as an ``ErrorReply``. Lower-layer errors (runtime, store,
sessions) are translated here, once.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import trio

from actors import ActorError, ActorHandle, ActorNotFound, MailboxClosed, MailboxFull
from supervisor import ActorSystem
from actors.platform.daemon.jail_status import jail_report
from actors.platform.daemon.control.mcp_commands import mcp_server_statuses
from actors.platform.daemon.control.record_commands import store_errors
from control.errors import RequestFailed
from actors.platform.outbound import OutboundRegistry
from control.paths import DaemonPaths
from actors.session import (
    TURN_NAME,
    NoTurnRunning,
    SessionBusy,
    SessionOptions,
    SessionService,
    TooManyRunningTurns,
)
from config.daemon import DaemonConfig
from messages import control as c
from messages import session as s
from messages.paths import SESSIONS, child_path, session_id_of, session_path, split_path
from messages.request import Request
from messages.session import EventFeed, SessionMessage
from store.errors import (
    SessionNotFoundError,
    TitleConflictError,
)
from store.protocol import SessionStore
from tools.jail.runtime import DaemonJails

if TYPE_CHECKING:
    from actors.platform.daemon.config_reload import ConfigReloader
    from actors.platform.daemon.cluster.forwarding import PeerRouter
    from actors.platform.daemon.cluster.hosts.placement import HostRouter

__all__ = ["PROTECTED_PATHS", "ControlService"]

log = logging.getLogger("hermes_actors.control")

#: The type of a reply, named by the request asked (:class:`~messages.request.Request`).
R = TypeVar("R")

#: Infrastructure actors ``kill`` refuses: stopping them is ``hermes-actors stop``.
PROTECTED_PATHS = frozenset({
    "", "store", "providers", "control", "cluster", "sessions", "platform", "mcp", "cron", "pairing", "hosts",
})
#: What a client may ask of a message sent while a turn runs (None: the session's display.busy_input_mode).
BUSY_MODES = (None, "interrupt", "queue", "steer")
#: The kind that takes session messages (a subagent is a session of its own, of this kind).
SESSION_KIND = "session"


class ControlService:
    """Serves the control requests of every connection.

    Args:
        system: the running actor system (tree, lookup, kill).
        paths: the daemon's files (for ``status``).
        config: the ``daemon`` configuration section.
        request_stop: called with a reason to stop the daemon gracefully.
        store: the session store, or None when the daemon runs without one.
        sessions: the sessions service, or None (session requests are ``unavailable``).
        jails: the daemon's jails (for ``status``), or None where it runs no sessions.
        outbound: the connected messaging platforms (a paired user is welcomed), or None.
        peers: forwards requests for sessions other daemons run (``daemon.cluster_listen``), or None.
        hosts: places the control socket's sessions on the daemon's session hosts (``daemon.hosts``
            above 1), or None when the daemon runs them itself.
        config_source: what re-reads the configuration files for new sessions (for ``status``), or None.
    """

    def __init__(
        self,
        *,
        system: ActorSystem,
        paths: DaemonPaths,
        config: DaemonConfig,
        request_stop: Callable[[str], None],
        store: SessionStore | None = None,
        sessions: SessionService | None = None,
        jails: DaemonJails | None = None,
        outbound: OutboundRegistry | None = None,
        peers: PeerRouter | None = None,
        hosts: HostRouter | None = None,
        config_source: ConfigReloader | None = None,
    ) -> None:
        self.system = system
        self.paths = paths
        self.config = config
        self.store = store
        self.sessions = sessions
        self._request_stop = request_stop
        self._jails = jails
        self.outbound = outbound
        self.peers = peers
        self.hosts = hosts
        self._config_source = config_source
        self._started_at = trio.current_time()

    # -- the actor tree ---------------------------------------------------------------------

    def resolve(self, path: str) -> str:
        """The live actor path ``path`` names: itself, or a session id's session actor.

        Raises:
            RequestFailed: ``not_found``.
        """
        registry = self.system.registry
        path = path.strip().strip("/")
        if path in registry:
            return path
        for candidate in (session_path(path), child_path(SESSIONS, path)):
            if candidate in registry:
                return candidate
        raise RequestFailed("not_found", f"no live actor at {path!r}")

    def tree(self, request: c.Tree) -> c.TreeReply:
        """The tree under the requested path."""
        path = self.resolve(request.path) if request.path.strip("/ ") else ""
        try:
            node = self.system.tree(path)
        except ActorNotFound as exc:
            raise RequestFailed("not_found", str(exc)) from exc
        return c.TreeReply(request.request_id, node, trio.current_time())

    def inspect(self, request: c.Inspect) -> c.InspectReply:
        """One actor's snapshot."""
        handle = self._lookup(self.resolve(request.path))
        return c.InspectReply(request.request_id, handle.statistics(), trio.current_time())

    def kill(self, request: c.Kill) -> c.Ok:
        """Stop the actor at a path; its kind decides what that means to the session.

        Raises:
            RequestFailed: ``no_turn`` for a session's turn while it runs none, ``not_found``, ``invalid``.
        """
        try:
            path = self.resolve(request.path)
        except RequestFailed:
            self._refuse_missing_turn(request.path)
            raise
        if path in PROTECTED_PATHS:
            raise RequestFailed("invalid", f"{path or 'the root'} is part of the daemon; use `hermes-actors stop`")
        handle = self._lookup(path)
        reason = request.reason or "killed by operator"
        log.info("kill %s (%s): %s", path, handle.kind, reason)
        handle.stop(reason, requested_by="operator")
        return c.Ok(request.request_id, f"stopping {_human_path(path)}")

    async def status(self, request: c.Status, connections: int) -> c.StatusReply:
        """The daemon's figures, its configuration first brought up to date with the files."""
        if self.sessions is not None:
            await self.sessions.refresh_deps()
        source = self._config_source
        kinds = self._count_kinds()
        jails = self._jails
        launcher = jails.launcher if jails is not None else None
        return c.StatusReply(
            request_id=request.request_id,
            pid=os.getpid(),
            version=c.PROTOCOL_VERSION,
            home=str(self.paths.home),
            socket=str(self.paths.socket),
            uptime_seconds=trio.current_time() - self._started_at,
            actors=len(self.system.registry),
            live_sessions=len(await self.live_ids()),
            running_turns=kinds.get("turn", 0),
            connections=connections,
            sessions_available=self.sessions is not None,
            sandbox=jail_report(jails.config, launcher.status) if jails is not None and launcher is not None else None,
            mcp=mcp_server_statuses(self.system),
            platforms=self.platform_statuses(),
            config=None if source is None else c.ConfigStatus(
                source.state.read_at, list(source.state.restart_needed), source.state.refused
            ),
            api=self.api_status(),
        )

    def api_status(self) -> c.ApiStatus | None:
        """The HTTP API's figures, when it runs."""
        try:
            details = self.system.tree("platform/api").snapshot.details
        except ActorNotFound:
            return None
        return c.ApiStatus(
            urls=list(details.get("urls") or []), in_flight=details.get("in_flight", 0),
            runs=details.get("runs", 0), active_runs=details.get("active_runs", 0),
            webhooks=dict(details.get("webhooks") or {}),
        )

    def platform_statuses(self) -> list[c.PlatformStatus]:
        """The messaging bots under ``platform`` (the HTTP API has no connection to report)."""
        try:
            node = self.system.tree("platform")
        except ActorNotFound:
            return []
        statuses = []
        for child in node.children:
            details = child.snapshot.details
            if "connection" in details:
                statuses.append(c.PlatformStatus(
                    name=child.snapshot.path.rsplit("/", 1)[-1], connection=details["connection"],
                    error=details.get("connection_error"), received=details.get("received", 0), sent=details.get("sent", 0),
                    refused=details.get("refused", 0), chats=details.get("chats", 0),
                ))
        return statuses

    def stop_daemon(self, request: c.StopDaemon) -> c.Ok:
        """Ask the daemon to stop; the reply goes out first."""
        self._request_stop("stop requested by a client")
        return c.Ok(request.request_id, "stopping")

    def _refuse_missing_turn(self, path: str) -> None:
        """Say "no turn running" when ``path`` names the turn of a live session that runs none."""
        names = split_path(path.strip().strip("/"))
        if len(names) < 2 or names[-1] != TURN_NAME:
            return
        try:
            owner = self.resolve("/".join(names[:-1]))
        except RequestFailed:
            return
        raise RequestFailed("no_turn", f"no turn running in {_human_path(owner)}: nothing to kill")

    def _lookup(self, path: str) -> ActorHandle[Any]:
        try:
            return self.system.lookup(path)
        except ActorNotFound as exc:
            raise RequestFailed("not_found", f"no live actor at {path!r}") from exc

    def _count_kinds(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for snapshot in self.system.tree().walk():
            counts[snapshot.kind] = counts.get(snapshot.kind, 0) + 1
        return counts

    # -- live sessions ------------------------------------------------------------------------

    def _backend(self) -> SessionService:
        if self.sessions is None:
            raise RequestFailed("unavailable", "this daemon runs no sessions")
        return self.sessions

    async def create_session(self, request: c.CreateSession) -> c.SessionCreated:
        """Start a session working in the client's directory.

        Raises:
            RequestFailed: ``conflict`` for a title another session has, ``invalid``.
        """
        backend = self._backend()
        if not os.path.isabs(request.cwd):
            raise RequestFailed("invalid", f"cwd must be an absolute path, got {request.cwd!r}")
        if not await trio.to_thread.run_sync(os.path.isdir, request.cwd):
            raise RequestFailed("invalid", f"cwd {request.cwd!r} is not a directory the daemon can see")
        if request.title is not None:
            await self._refuse_taken_title(request.title)
        try:
            session_id = await backend.create_session(_options_from(request))
        except (ValueError, TypeError) as exc:
            raise RequestFailed("invalid", str(exc)) from exc
        except ActorError as exc:
            # Two clients racing for one title: the store refused the second as the session started.
            if isinstance(exc.__cause__, TitleConflictError) and request.title is not None:
                await self._refuse_taken_title(request.title)
            raise RequestFailed("unavailable", f"the session could not start: {exc.__cause__ or exc}") from exc
        log.info("session %s created (source %s, cwd %s)", session_id, request.source, request.cwd)
        return c.SessionCreated(request.request_id, session_id)

    async def _refuse_taken_title(self, title: str) -> None:
        with store_errors():
            holder = await self.require_store().session_by_title(title)
        if holder is not None:
            raise RequestFailed("conflict", f"a session titled {title!r} already exists (id {holder.id})")

    async def session_id_for(self, ref: str) -> str:
        """The id of the stored session ``ref`` names: its id, else its title (an id wins).

        Raises:
            RequestFailed: ``not_found``.
        """
        if self.store is None or self.is_live(ref):
            return ref
        store = self.store
        with store_errors():
            try:
                return (await store.get_session(ref)).id
            except SessionNotFoundError:
                titled = await store.session_by_title(ref)
        if titled is None:
            raise RequestFailed("not_found", f"no session with id or title {ref!r}")
        return titled.id

    async def session(self, session_id: str) -> ActorHandle[SessionMessage]:
        """The live handle of a session (woken from the store when hibernated).

        Raises:
            RequestFailed: ``not_found`` or ``unavailable``.
            SessionOwnedElsewhere: another daemon runs it (the connection forwards the request there).
        """
        backend = self._backend()
        try:
            return await backend.get(session_id)
        except LookupError as exc:
            raise RequestFailed("not_found", f"no session {session_id!r}") from exc
        except ActorError as exc:
            raise RequestFailed("unavailable", str(exc)) from exc

    async def subscribe(self, request: c.Attach, label: str) -> EventFeed:
        """Subscribe a connection to a session's events, replaying from ``since``."""
        if request.since is not None and request.since < 0:
            raise RequestFailed("invalid", "since must be >= 0")
        return await self._ask_session(request.session_id, s.Subscribe(label, request.since, running_turn=True))

    async def send_message(self, request: c.SendMessage) -> c.Ok:
        """Deliver a user message (a turn) if the running-turn cap allows it; the reply says what became of it."""
        if request.busy_mode not in BUSY_MODES:
            raise RequestFailed("invalid", f"busy_mode must be one of {', '.join(m for m in BUSY_MODES if m)}")
        backend = self._backend()
        try:
            outcome = await backend.send(request.session_id, request.text, source="cli", busy_mode=request.busy_mode)
        except (TooManyRunningTurns, SessionBusy) as exc:
            raise RequestFailed("busy", str(exc)) from exc
        except LookupError as exc:
            raise RequestFailed("not_found", f"no session {request.session_id!r}") from exc
        except ActorError as exc:
            raise RequestFailed("unavailable", str(exc)) from exc
        return c.Ok(request.request_id, _SEND_OUTCOMES.get(outcome, "sent"))

    async def interrupt(self, request: c.InterruptSession) -> c.Ok:
        """Interrupt a session's running turn.

        Raises:
            RequestFailed: ``no_turn`` when it runs none (nothing was done).
        """
        said = await self._ask_session(request.session_id, s.Interrupt(request.text, requested_by="operator"))
        return c.Ok(request.request_id, said)

    async def compress(self, request: c.CompressSession) -> c.Ok:
        """Compress a session's context now; the reply says by how much."""
        said = await self._ask_session(request.session_id, s.Compress(request.topic))
        return c.Ok(request.request_id, said)

    async def reset_tools(self, request: c.ResetSessionTools) -> c.Ok:
        """Rebuild a session's tool list; the reply names the tools it now has."""
        names = await self._ask_session(request.session_id, s.ResetTools())
        return c.Ok(request.request_id, f"tools reset: {len(names)} tools ({', '.join(names)})")

    async def answer(self, request: c.AnswerSessionRequest, answered_by: str) -> c.Ok:
        """Answer a pending approval or clarify question."""
        await self._tell(request.session_id, s.AnswerRequest(request.pending_id, request.answer, answered_by))
        return c.Ok(request.request_id, "answer sent")

    async def set_yolo(self, request: c.SetSessionYolo) -> c.Ok:
        """Turn a session's yolo toggle on or off."""
        enabled = await self._ask_session(request.session_id, s.SetYolo(request.enabled))
        return c.Ok(request.request_id, f"yolo {'on' if enabled else 'off'} for session {request.session_id}")

    async def steer(self, request: c.SteerSession) -> c.Ok:
        """Steer the running turn of the session or subagent at a path (a session id alone is a session).

        Raises:
            RequestFailed: ``no_turn`` when it runs none (the text is not kept: send it as a message).
        """
        try:
            path = self.resolve(request.path)
        except RequestFailed:
            if "/" in request.path:
                raise
            handle = await self.session(request.path)
        else:
            handle = self._lookup(path)
            if handle.kind != SESSION_KIND:
                raise RequestFailed("invalid", f"{_human_path(path)} is a {handle.kind}, not a session or subagent")
        await self._ask(handle, s.Steer(request.text))
        return c.Ok(request.request_id, "steered: the text reaches the model with the next tool result")

    async def _ask(self, handle: ActorHandle[SessionMessage], message: Request[R]) -> R:
        """Ask a session or subagent at hand; its refusals become replies a person can read."""
        with _refusals(handle.path):
            return await handle.ask(message)

    async def _ask_session(self, session_id: str, message: Request[R]) -> R:
        """Ask a session by id: woken from the store if needed, asked again if it was just going to
        sleep (``SessionService.ask``); its refusals become replies a person can read.

        Raises:
            RequestFailed; SessionOwnedElsewhere: another daemon runs it (the connection forwards there).
        """
        with _refusals(session_path(session_id)):
            try:
                return await self._backend().ask(session_id, message)
            except LookupError as exc:
                raise RequestFailed("not_found", f"no session {session_id!r}") from exc

    async def _tell(self, session_id: str, message: SessionMessage) -> None:
        await self._send(await self.session(session_id), message)

    async def _send(self, handle: ActorHandle[SessionMessage], message: SessionMessage) -> None:
        try:
            handle.tell_nowait(message)
        except MailboxFull as exc:
            raise RequestFailed("busy", f"{handle.path} has too many queued messages") from exc
        except MailboxClosed as exc:
            raise RequestFailed("not_found", f"{handle.path} has stopped") from exc
        await trio.lowlevel.checkpoint()

    # -- stored sessions -----------------------------------------------------------------------

    def require_store(self) -> SessionStore:
        """The session store.

        Raises:
            RequestFailed: ``unavailable`` when this daemon has none.
        """
        if self.store is None:
            raise RequestFailed("unavailable", "this daemon has no session store")
        return self.store

    async def live_ids(self) -> frozenset[str]:
        """The ids of the sessions running on this daemon now."""
        return await self.sessions.live_ids() if self.sessions is not None else frozenset()

    def is_live(self, session_id: str) -> bool:
        """True while the session ``session_id`` runs on this daemon."""
        return self.sessions is not None and self.sessions.is_live(session_id)


@contextmanager
def _refusals(path: str) -> Iterator[None]:
    """A session's refusals (and its silence) as replies a person can read."""
    try:
        yield
    except NoTurnRunning as exc:
        raise RequestFailed("no_turn", str(exc)) from exc
    except SessionBusy as exc:
        raise RequestFailed("busy", str(exc)) from exc
    except ValueError as exc:
        raise RequestFailed("invalid", str(exc)) from exc
    except MailboxClosed as exc:
        raise RequestFailed("not_found", f"{_human_path(path)} has stopped") from exc
    except ActorError as exc:
        raise RequestFailed("unavailable", f"{_human_path(path)} did not answer: {exc}") from exc


def _options_from(request: c.CreateSession) -> SessionOptions:
    """The options of a session a client asked for (None fields: config.yaml decides)."""
    return SessionOptions(
        cwd=request.cwd,
        model=request.model,
        provider=request.provider,
        base_url=request.base_url,
        api_mode=request.api_mode,
        source=request.source,
        title=request.title,
        sandbox=request.sandbox,
        limits=request.limits,
        one_shot=request.one_shot,
    )


#: What a session said of a message it was sent, as the reply tells the client.
_SEND_OUTCOMES = {
    "started": "sent: a turn started",
    "queued": "queued: it runs when the current turn ends",
    "interrupting": "sent: interrupting the running turn",
    "steered": "steered into the running turn",
}


def _human_path(path: str) -> str:
    """A live path as a person reads it: ``session ab12`` for a session, the path below ``sessions/`` else."""
    session_id = session_id_of(path)
    if session_id is not None and path == session_path(session_id):
        return f"session {session_id}"
    return path.removeprefix(f"{SESSIONS}/")
