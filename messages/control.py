"""The control conversation: CLI clients and the daemon over ``run/control.sock``.

A client opens with :class:`Hello` carrying :data:`PROTOCOL_VERSION`; the
daemon answers :class:`Welcome` or an :class:`ErrorReply` with code
``version_mismatch`` and closes. Every request then carries a client-chosen
``request_id`` that its reply echoes, so replies and session events (sent as
the :mod:`messages.events` classes themselves, which carry no request id) can
share one stream.

Two unions: :data:`ClientMessage` (client to daemon) and
:data:`DaemonMessage` (daemon to client). Requests about a session are named
``<Verb>Session`` (``InterruptSession``, ``SteerSession`` ...): the daemon turns
each into the session's own message of :mod:`messages.session`. Fields here are plain data; the
daemon validates values (an unknown path, a bad limit) and answers an
:class:`ErrorReply` whose ``code`` is one of :data:`ERROR_CODES`. The requests about the daemon's
services (MCP servers, cron jobs, pairing) live in :mod:`messages.control_services`, the stored
sessions' replies in :mod:`messages.session_records`, a session's checkpoints in :mod:`messages.checkpoints`;
all are re-exported here.
"""

from __future__ import annotations

import attrs

from messages.checkpoints import CheckpointReply, CheckpointRequest, CheckpointView
from messages.curator import CurateReply, CurateRequest, CuratorChange
from messages.events import SessionEvent
from messages.control_services import (
    ApiStatus,
    ConfigStatus,
    CronJobStatus,
    CronReply,
    CronRequest,
    Extensions,
    ExtensionsReply,
    HookStatus,
    HostStatus,
    McpCall,
    McpCallReply,
    McpReply,
    McpServers,
    McpServerStatus,
    McpTools,
    McpToolsReply,
    PairedUserView,
    PairingCodeView,
    PairingReply,
    PairingRequest,
    PlatformStatus,
    PluginStatus,
    ReloadMcp,
)
from messages.session_records import ExportChunk, SearchReply, SessionListReply, SessionShowReply
from messages.supervision import ActorSnapshot, TreeNode

__all__ = [
    "AnswerSessionRequest",
    "ApiStatus",
    "Attach",
    "Attached",
    "CheckpointReply",
    "CheckpointRequest",
    "CheckpointView",
    "ClientMessage",
    "ClientRequest",
    "CompressSession",
    "ConfigStatus",
    "CreateSession",
    "CronJobStatus",
    "CronReply",
    "CronRequest",
    "CurateReply",
    "CurateRequest",
    "CuratorChange",
    "DaemonMessage",
    "DeleteSession",
    "Detach",
    "ERROR_CODES",
    "ErrorReply",
    "ExportSession",
    "Extensions",
    "ExtensionsReply",
    "Hello",
    "HookStatus",
    "HostStatus",
    "Inspect",
    "InspectReply",
    "InterruptSession",
    "JailReport",
    "Kill",
    "ListSessions",
    "McpCall",
    "McpCallReply",
    "McpReply",
    "McpServerStatus",
    "McpServers",
    "McpTools",
    "McpToolsReply",
    "Ok",
    "PROTOCOL_VERSION",
    "PairedUserView",
    "PairingCodeView",
    "PairingReply",
    "PairingRequest",
    "PlatformStatus",
    "PluginStatus",
    "ReloadMcp",
    "ResetSessionTools",
    "SearchSessions",
    "SendMessage",
    "SessionCreated",
    "SetSessionYolo",
    "ShowSession",
    "Status",
    "StatusReply",
    "SteerSession",
    "StopDaemon",
    "Tree",
    "TreeReply",
    "Welcome",
]

#: Bumped whenever a message changes incompatibly (2: the session requests were renamed
#: ``InterruptSession``, ``SteerSession`` ... apart from the session's own messages).
PROTOCOL_VERSION = 2

#: Every ``ErrorReply.code`` the daemon sends.
ERROR_CODES: frozenset[str] = frozenset(
    {
        "bad_frame",  # the frame could not be decoded (the text says why)
        "version_mismatch",  # Hello with another protocol version
        "not_hello",  # a request before the Hello
        "not_found",  # unknown actor path or session id
        "invalid",  # a value out of range or a request that makes no sense now
        "busy",  # a limit (running turns) was reached; try again later
        "no_turn",  # interrupt, steer or kill of a turn while the session runs none: nothing was done
        "conflict",  # the request clashes with what exists (a title another session has)
        "unavailable",  # the part of the daemon that serves this is not running
        "slow_client",  # the client fell too far behind and is dropped
        "shutting_down",  # the daemon is stopping
        "internal",  # a bug: the daemon logged it
    }
)

# -- client to daemon ---------------------------------------------------------------------


@attrs.frozen
class Hello:
    """The first frame of every connection."""

    version: int
    client: str = "hermes-actors"
    pid: int = 0


@attrs.frozen
class CreateSession:
    """Start a new session working in ``cwd``; the reply is :class:`SessionCreated`.

    ``None`` provider fields fall back to the daemon's ``config.yaml``; so does ``sandbox`` (a mode,
    never wider than the daemon's ``sandbox.max_mode``: a wider one is refused as ``invalid``).
    ``one_shot`` marks a ``chat -q`` session: it hibernates as soon as its turn is over and no
    client is attached, instead of after ``daemon.hibernate_after_seconds``.
    """

    request_id: str
    cwd: str
    model: str | None = None
    provider: str | None = None
    base_url: str | None = None
    api_mode: str | None = None
    source: str = "cli"
    title: str | None = None
    sandbox: str | None = None
    limits: dict[str, int] | None = None
    one_shot: bool = False


@attrs.frozen
class Attach:
    """Receive a session's events from ``since`` (exclusive), or only new ones when None.

    The reply is :class:`Attached`; events follow on the same connection
    until :class:`Detach` or the connection closes.
    """

    request_id: str
    session_id: str
    since: int | None = None


@attrs.frozen
class Detach:
    """Stop receiving a session's events; the session goes on."""

    request_id: str
    session_id: str


@attrs.frozen
class SendMessage:
    """A user message for a session (starts a turn).

    ``busy_mode`` (``interrupt`` or ``queue``) overrides the session's
    ``display.busy_input_mode`` for this message when a turn is running: a
    client reading a pipe sends ``queue`` so no line interrupts the one before.
    """

    request_id: str
    session_id: str
    text: str
    busy_mode: str | None = None


@attrs.frozen
class InterruptSession:
    """Cancel a session's running turn; ``text``, when given, becomes the next message."""

    request_id: str
    session_id: str
    text: str | None = None


@attrs.frozen
class SteerSession:
    """Out-of-band text for the running turn of the session or subagent at ``path``."""

    request_id: str
    path: str
    text: str


@attrs.frozen
class CompressSession:
    """Compress a session's context now, optionally focused on ``topic``."""

    request_id: str
    session_id: str
    topic: str | None = None


@attrs.frozen
class ResetSessionTools:
    """Rebuild a session's frozen tool list from the registry (``/reset-tools``)."""

    request_id: str
    session_id: str


@attrs.frozen
class SetSessionYolo:
    """Turn a session's ``--yolo`` toggle on or off (dangerous commands approved without asking;
    the hardline blocklist is still refused); every attached client is told."""

    request_id: str
    session_id: str
    enabled: bool


@attrs.frozen
class AnswerSessionRequest:
    """Answer a pending approval or clarify request (``pending_id``); the first answer wins.

    ``on_behalf`` is set when a program answers for nobody (``chat -q`` without a terminal denies):
    why, shown to the model and the clients instead of "the user".
    """

    request_id: str
    session_id: str
    pending_id: str
    answer: str
    on_behalf: str | None = None


@attrs.frozen
class Tree:
    """The live actor tree at ``path`` (the whole daemon by default)."""

    request_id: str
    path: str = ""


@attrs.frozen
class Inspect:
    """One actor's full snapshot (a session id alone names its session actor)."""

    request_id: str
    path: str


@attrs.frozen
class Kill:
    """Stop the actor at ``path``; what that means depends on its kind."""

    request_id: str
    path: str
    reason: str = "killed by operator"


@attrs.frozen
class ListSessions:
    """Stored sessions, newest first."""

    request_id: str
    limit: int = 50
    offset: int = 0
    source: str | None = None
    #: False lists top-level sessions only (each with its subagent count); True lists subagents too.
    include_subagents: bool = False


@attrs.frozen
class SearchSessions:
    """Full-text search over stored sessions."""

    request_id: str
    query: str
    limit: int = 3
    roles: list[str] = attrs.Factory(lambda: ["user", "assistant"])
    source: str | None = None


@attrs.frozen
class ShowSession:
    """A stored session's first ``head`` and last ``tail`` messages."""

    request_id: str
    session_id: str
    head: int = 20
    tail: int = 10


@attrs.frozen
class ExportSession:
    """A stored session as JSON lines (``jsonl``), Markdown (``md``) or a self-contained HTML page
    (``html``), sent in :class:`ExportChunk` s."""

    request_id: str
    session_id: str
    format: str = "jsonl"


@attrs.frozen
class DeleteSession:
    """Delete a stored session (a live one is stopped first)."""

    request_id: str
    session_id: str


@attrs.frozen
class Status:
    """The daemon's status: pid, uptime, actors, sessions."""

    request_id: str


@attrs.frozen
class StopDaemon:
    """Stop the daemon gracefully; the reply is sent before it stops."""

    request_id: str


#: What a client asks once it has said Hello (each carries the ``request_id`` its reply names).
ClientRequest = (
    CreateSession
    | Attach
    | Detach
    | SendMessage
    | InterruptSession
    | SteerSession
    | CompressSession
    | ResetSessionTools
    | AnswerSessionRequest
    | SetSessionYolo
    | Tree
    | Inspect
    | Kill
    | ListSessions
    | SearchSessions
    | ShowSession
    | ExportSession
    | DeleteSession
    | Status
    | StopDaemon
    | McpServers
    | McpTools
    | McpCall
    | ReloadMcp
    | CronRequest
    | PairingRequest
    | CheckpointRequest
    | CurateRequest
    | Extensions
)
ClientMessage = Hello | ClientRequest

# -- daemon to client ---------------------------------------------------------------------


@attrs.frozen
class Welcome:
    """The daemon accepted the Hello."""

    version: int
    daemon_pid: int
    connection: str


@attrs.frozen
class Ok:
    """A request succeeded and has nothing more to say than ``message``."""

    request_id: str
    message: str = ""


@attrs.frozen
class ErrorReply:
    """A request (or, with ``request_id`` None, the connection) failed.

    ``code`` is one of :data:`ERROR_CODES`; ``message`` is for a human.
    """

    code: str
    message: str
    request_id: str | None = None


@attrs.frozen
class SessionCreated:
    """A session was created."""

    request_id: str
    session_id: str


@attrs.frozen
class Attached:
    """The client now receives the session's events (replayed ones first)."""

    request_id: str
    session_id: str


@attrs.frozen
class TreeReply:
    """The actor tree asked for; ``now`` is the daemon's clock, for actors' ages."""

    request_id: str
    tree: TreeNode
    now: float


@attrs.frozen
class InspectReply:
    """One actor's snapshot; ``now`` is the daemon's clock, for its age."""

    request_id: str
    snapshot: ActorSnapshot
    now: float


@attrs.frozen
class JailReport:
    """The daemon's jail, as its start-up preflight found it.

    ``available`` False means no jail can run: sessions that are not ``full-access`` refuse to start
    processes; ``failed_step`` and ``advice`` say what failed and what to do. ``seccomp`` says whether
    the jail's system-call filter is loaded (``seccomp_error``: why not); ``limits`` how each of
    ``sandbox.limits`` is enforced (``cgroup v1``, ``cgroup v2``, ``tmpfs``, ``rlimit: ...``,
    ``nice: ...``, or ``none: why``).
    """

    mode: str
    max_mode: str
    available: bool
    bwrap: str | None = None
    source: str | None = None
    version: str | None = None
    mounts_proc: bool = False
    seccomp: bool = False
    seccomp_error: str | None = None
    limits: dict[str, str] = attrs.Factory(dict)
    error: str | None = None
    failed_step: str | None = None
    advice: str | None = None


@attrs.frozen
class StatusReply:
    """What ``hermes-actors status`` shows (``sandbox`` None: a daemon that runs no sessions)."""

    request_id: str
    pid: int
    version: int
    home: str
    socket: str
    uptime_seconds: float
    actors: int
    live_sessions: int
    running_turns: int
    connections: int
    sessions_available: bool
    sandbox: JailReport | None = None
    mcp: list[McpServerStatus] = attrs.Factory(list)
    platforms: list[PlatformStatus] = attrs.Factory(list)
    config: ConfigStatus | None = None
    api: ApiStatus | None = None
    hosts: list[HostStatus] = attrs.Factory(list)


DaemonMessage = (
    Welcome
    | Ok
    | ErrorReply
    | SessionCreated
    | Attached
    | TreeReply
    | InspectReply
    | SessionListReply
    | SearchReply
    | SessionShowReply
    | ExportChunk
    | StatusReply
    | McpReply
    | McpToolsReply
    | McpCallReply
    | CronReply
    | PairingReply
    | CheckpointReply
    | CurateReply
    | ExtensionsReply
    | SessionEvent
)
