"""The control conversation's requests about the daemon's services, and their replies: MCP servers
(``hermes-actors mcp``), scheduled jobs (``cron``), the messaging platforms' pairing book
(``pairing``), plugins and hooks (``plugins list``, ``hooks list``). Part of :mod:`messages.control`, whose unions include them; ``StatusReply`` carries
:class:`McpServerStatus` and :class:`PlatformStatus` too."""

from __future__ import annotations

from typing import Any

import attrs

__all__ = [
    "ApiStatus",
    "ConfigStatus",
    "CronJobStatus",
    "CronReply",
    "CronRequest",
    "Extensions",
    "ExtensionsReply",
    "HookStatus",
    "HostStatus",
    "McpCall",
    "McpCallReply",
    "McpReply",
    "McpServerStatus",
    "McpServers",
    "McpTools",
    "McpToolsReply",
    "PairedUserView",
    "PairingCodeView",
    "PairingReply",
    "PairingRequest",
    "PlatformStatus",
    "PluginStatus",
    "ReloadMcp",
]

# -- client to daemon ---------------------------------------------------------------------


@attrs.frozen
class McpServers:
    """The configured MCP servers and their states; the reply is :class:`McpReply`."""

    request_id: str


@attrs.frozen
class McpTools:
    """The tools of the MCP servers this daemon connects to, as they listed them; the reply is
    :class:`McpToolsReply`. Asked by session hosts, which reach the servers through the front (one copy
    of each server for the whole daemon)."""

    request_id: str


@attrs.frozen
class McpCall:
    """Call ``tool`` (its MCP name) of MCP server ``server`` with ``arguments``; the reply is
    :class:`McpCallReply`. Sent by a session host for a session's call."""

    request_id: str
    server: str
    tool: str
    arguments: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen
class ReloadMcp:
    """Read ``mcp_servers`` from config.yaml again and restart every MCP server (``/reload-mcp``).

    The reply (:class:`McpReply`) comes once every server is ready or failed, or after
    ``wait_seconds``, whichever is first (a server still connecting then says so).
    """

    request_id: str
    wait_seconds: float = 10.0


@attrs.frozen
class CronRequest:
    """A ``hermes-actors cron`` verb; the reply is :class:`CronReply` (the jobs it concerns).

    ``action``: add (``schedule``, ``prompt`` and the optional fields), list, status (``job_id``),
    pause, resume, remove or run_now (``job_id``).
    """

    request_id: str
    action: str
    job_id: str | None = None
    name: str | None = None
    schedule: str | None = None
    prompt: str | None = None
    deliver: str | None = None
    skills: list[str] = attrs.Factory(list)
    model: str | None = None
    missed: str = "skip"
    time_budget: float | None = None
    token_budget: int | None = None
    approvals: str | None = None


@attrs.frozen
class PairingRequest:
    """A ``hermes-actors pairing`` verb; the reply is :class:`PairingReply`.

    ``action``: list, approve (``code``) or revoke (``platform`` and ``user_id``).
    """

    request_id: str
    action: str
    code: str | None = None
    platform: str | None = None
    user_id: str | None = None


@attrs.frozen
class Extensions:
    """The daemon's plugins and hooks; the reply is :class:`ExtensionsReply`."""

    request_id: str


# -- daemon to client ---------------------------------------------------------------------


@attrs.frozen
class McpServerStatus:
    """One configured MCP server: ``state`` is connecting, ready, failed or disabled."""

    name: str
    state: str
    transport: str = ""
    tools: int = 0
    error: str | None = None
    attempts: int = 0


@attrs.frozen
class ApiStatus:
    """The HTTP API (``platforms.api_server``): where it listens, requests being served, runs kept and running,
    and each webhook's counts by name (``platforms.webhook``)."""

    urls: list[str] = attrs.Factory(list)
    in_flight: int = 0
    runs: int = 0
    active_runs: int = 0
    webhooks: dict[str, dict[str, int]] = attrs.Factory(dict)


@attrs.frozen
class HostStatus:
    """One session host (``daemon.hosts``): ``state`` running, starting or down, and its own figures."""

    index: int
    state: str
    pid: int | None = None
    actors: int = 0
    live_sessions: int = 0
    running_turns: int = 0


@attrs.frozen
class ConfigStatus:
    """The configuration a daemon runs on, against its files now.

    ``read_at``: when ``config.yaml`` and ``.env`` were last read (Unix seconds; new sessions read them
    again when they change); ``restart_needed``: sections edited since the start that apply only after a
    restart; ``refused``: why the file as it is now cannot be used (new sessions keep the last good one).
    """

    read_at: float
    restart_needed: list[str] = attrs.Factory(list)
    refused: str | None = None


@attrs.frozen
class PlatformStatus:
    """A messaging platform's bot: its connection (connecting, connected, reconnecting, failed), last
    error, and what it has handled."""

    name: str
    connection: str
    error: str | None = None
    received: int = 0
    sent: int = 0
    refused: int = 0
    chats: int = 0


@attrs.frozen
class McpReply:
    """The MCP servers, in configuration order (``warnings``: what reading config.yaml found, on a reload)."""

    request_id: str
    servers: list[McpServerStatus] = attrs.Factory(list)
    warnings: list[str] = attrs.Factory(list)


@attrs.frozen
class McpToolsReply:
    """Each connected server's tools, as ``tools/list`` gave them (MCP ``Tool`` objects as JSON)."""

    request_id: str
    servers: dict[str, list[dict[str, Any]]] = attrs.Factory(dict)


@attrs.frozen
class McpCallReply:
    """An MCP call's outcome: the result the model sees (``payload``, ``unsuccessful``), or why there is
    none (``error``, what the model is told)."""

    request_id: str
    payload: dict[str, Any] | None = None
    unsuccessful: bool = False
    error: str | None = None


@attrs.frozen
class CronJobStatus:
    """One scheduled job as ``cron list`` shows it (times ISO 8601, UTC)."""

    id: str
    name: str
    schedule: str
    state: str
    running: bool = False
    deliver: str | None = None
    next_run: str | None = None
    last_run: str | None = None
    last_status: str | None = None
    last_error: str | None = None
    last_output: str | None = None
    approvals: str | None = None


@attrs.frozen
class CronReply:
    """The jobs a :class:`CronRequest` concerns (all of them for ``list``), by next run."""

    request_id: str
    jobs: list[CronJobStatus] = attrs.Factory(list)
    message: str = ""


@attrs.frozen
class PairingCodeView:
    """A pairing code waiting for the owner (``asked_at`` ISO 8601, UTC)."""

    code: str
    platform: str
    user_id: str
    user_name: str
    asked_at: str


@attrs.frozen
class PairedUserView:
    """A user the owner let in (``approved_at`` ISO 8601, UTC)."""

    platform: str
    user_id: str
    user_name: str
    approved_at: str


@attrs.frozen
class PairingReply:
    """The pairing book after a :class:`PairingRequest`, and what it did."""

    request_id: str
    pending: list[PairingCodeView] = attrs.Factory(list)
    paired: list[PairedUserView] = attrs.Factory(list)
    message: str = ""


@attrs.frozen
class PluginStatus:
    """One installed plugin (an entry point of ``group``).

    ``state``: loaded, failed (``error`` says why), not enabled (not in ``plugins.enabled``) or disabled
    (in ``plugins.disabled``). ``tools``, ``hooks``, ``providers`` and ``platforms`` are what it added;
    ``notes`` what it asked for that is not taken here.
    """

    name: str
    group: str
    state: str
    value: str = ""
    tools: list[str] = attrs.Factory(list)
    hooks: list[str] = attrs.Factory(list)
    providers: list[str] = attrs.Factory(list)
    platforms: list[str] = attrs.Factory(list)
    notes: list[str] = attrs.Factory(list)
    error: str | None = None


@attrs.frozen
class HookStatus:
    """One hook: its event, what runs (a command, a function, a plugin), its matcher, timeout and ``on_error``."""

    event: str
    label: str
    matcher: str | None = None
    timeout: float = 0.0
    on_error: str = "allow"


@attrs.frozen
class ExtensionsReply:
    """The plugins found installed, in discovery order, and the hooks, event by event."""

    request_id: str
    plugins: list[PluginStatus] = attrs.Factory(list)
    hooks: list[HookStatus] = attrs.Factory(list)
