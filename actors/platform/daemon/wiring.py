"""The composition root: the one place the daemon's tree is built from its configuration.

::

    (root)
    ├── store      the session store (SQLite's writer, or PostgreSQL's pool)
    ├── providers  the shared SDK and web clients, closed at the end
    ├── mcp        mcp/server:<name>, one per configured MCP server: connects in the background
    │              (a session host has ``mcp-relay`` instead: the front's servers, through the front)
    ├── sessions   every session: sessions/session:<id>/turn/tool:<call> ...
    ├── cron       scheduled jobs; each run is a session with source cron
    ├── curator    the skills curator's schedule; curator/run is a pass under way
    ├── cluster    (when ``daemon.cluster_listen``) peer daemons' forwarded requests, cluster/peer:<n>
    ├── hosts      (when ``daemon.hosts`` > 1) hosts/host:<n>, one per session-host process
    ├── control    the control socket and one connection actor per client
    └── platform   (when ``platforms.api_server.enabled``) platform/api, the HTTP API

A session-host process (``host_index`` given) builds the same tree without its front doors: no cron,
pairing, platforms, peer link or hosts; its ``control`` serves only the front, on the host's socket.

Around the tree, and outliving it: the jail launcher whose preflight runs the real jail once at
start. What every session shares is built here once: the tool registry, the client pool behind a
connector, model metadata, the provider keys and credential pools, the jails.
"""

from __future__ import annotations

import functools
import logging
import os
from datetime import datetime, timezone
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import trio

from actors import ActorError, ActorHandle, ActorNotFound
from supervisor import ActorSystem, ChildSpec, RestartType, Supervisor, open_actor_system
from actors.platform.cron.actor import CRON, CronActor, ListJobs
from actors.platform.curator import CURATOR, CuratorActor
from tools.skills.curation import CurationError
from actors.platform.cron.book import StoreJobBook
from actors.platform.cron.runner import SessionJobRunner
from actors.platform.cron.script import CronScripts
from actors.platform.cron.tool import register_cronjob
from actors.mcp import MCP, McpDeps, McpSupervisor
from actors.platform.daemon.cluster.hosts.mcp_relay import FrontMcp, McpRelay
from actors.platform.api.auth import KEY_VARIABLE
from actors.platform.api.firsts import FirstTokens
from actors.platform.daemon.control.server import ControlServer
from actors.platform.daemon.config_reload import ConfigReloader, FileStamps
from actors.platform.daemon.control.service import ControlService
from actors.platform.daemon.cluster.hosts.actor import KILL_GRACE_SECONDS as HOST_KILL_GRACE_SECONDS
from actors.platform.daemon.cluster.hosts.actor import START_SECONDS as HOST_START_SECONDS
from actors.platform.daemon.cluster.hosts.actor import HostActor
from actors.platform.daemon.cluster.hosts.link import REPLY_FRAME_LIMIT
from actors.platform.daemon.cluster.hosts.paths import HostPaths
from actors.platform.daemon.cluster.hosts.process import FRONT_ADDRESS_VARIABLE
from actors.platform.daemon.cluster.hosts.placement import HOSTS, HostRouter, host_name
from actors.platform.daemon.jail_status import log_jail_status
from actors.platform.daemon.cluster.handshake import peer_secret
from actors.platform.daemon.cluster.forwarding import PeerRouter
from actors.platform.daemon.cluster.peering import PeerListener
from actors.platform.daemon.infrastructure.providers import ProvidersActor
from actors.platform.daemon.infrastructure.store import StoreActor
from actors.platform.daemon.toolbox import build_toolbox, load_extensions
from tools.plugins.context import PluginPlatform
from actors.platform.gateway import PAIRING, PairingActor
from actors.platform.gateway.send_message import register_send_message
from actors.platform.gateway.voice import Transcriber, speech_endpoint
from actors.platform.gateway.adapter import PlatformAdapter
from actors.platform.outbound import OutboundRegistry, add_platform_names
from actors.platform.plugins import PlatformSetup, plugin_platform_factory
from control.paths import DaemonPaths
from control.profiles import hidden_root
from actors.session import SessionDeps, SessionService, SessionsSupervisor
from actors.subagent import delegate_capability
from config.loader import Config, load_env_file
from config.discord import TOKEN_VARIABLE as DISCORD_TOKEN
from config.gateway import read_access_environment
from config.matrix import HOME_VARIABLE as MATRIX_HOME
from config.matrix import HOMESERVER_VARIABLE as MATRIX_HOMESERVER
from config.matrix import TOKEN_VARIABLE as MATRIX_TOKEN
from config.matrix import USER_VARIABLE as MATRIX_USER
from config.matrix import MatrixConfig
from config.mattermost import HOME_VARIABLE as MATTERMOST_HOME
from config.mattermost import TOKEN_VARIABLE as MATTERMOST_TOKEN
from config.mattermost import URL_VARIABLE as MATTERMOST_URL
from config.mattermost import MattermostConfig
from config.email import EmailConfig, read_email_environment
from config.signal import ACCOUNT_VARIABLE as SIGNAL_ACCOUNT
from config.signal import GROUPS_VARIABLE as SIGNAL_GROUPS
from config.signal import HOME_VARIABLE as SIGNAL_HOME
from config.signal import REACTIONS_VARIABLE as SIGNAL_REACTIONS
from config.signal import URL_VARIABLE as SIGNAL_URL
from config.signal import SignalConfig
from config.whatsapp import VARIABLES as WHATSAPP_VARIABLES
from config.slack import APP_TOKEN_VARIABLE as SLACK_APP_TOKEN
from config.slack import HOME_VARIABLE as SLACK_HOME
from config.slack import TOKEN_VARIABLE as SLACK_TOKEN
from config.slack import SlackConfig
from config.telegram import TOKEN_VARIABLE as TELEGRAM_TOKEN
from config.timezone import user_zone
from messages.paths import SESSIONS
from providers._lazy_sdk import preload_sdk
from providers.clients import ClientPool
from providers.metadata import ModelMetadata
from providers.modes import resolve_api_mode
from providers.recovery.connector import PooledConnector
from providers.recovery.keys import ProviderKeys, load_provider_keys
from messages import control as c
from messages.codec import Codec
from store.factory import lease_directory, make_store
from store.sql.store import SqlSessionStore
from tools.checkpoints import Checkpoints
from tools.jail.launcher import open_launcher
from tools.jail.runtime import DaemonJails, RuntimeDir, hidden_daemon_paths
from tools.web import open_web_client

if TYPE_CHECKING:
    from starlette.routing import BaseRoute

    from actors.platform.api.server import ApiServer
    from actors.platform.email import EmailBot
    from actors.platform.matrix import MatrixBot
    from actors.platform.mattermost import MattermostBot
    from actors.platform.signal import SignalBot
    from actors.platform.slack import SlackBot
    from actors.platform.whatsapp import WhatsAppBot, WhatsAppWebhook

__all__ = ["open_daemon_tree"]

log = logging.getLogger("hermes_actors.daemon")

#: A session host's actor that registers the front's MCP tools (``actors.platform.daemon.cluster.hosts.mcp_relay``).
MCP_RELAY = "mcp-relay"
#: The longest one cron run may take before it is interrupted and reported failed.
CRON_TIME_BUDGET_SECONDS = 1800.0
#: How long a job's script may run: Hermes's default (``cron.script_timeout_seconds``).
CRON_SCRIPT_TIMEOUT_SECONDS = 3600.0
#: How long stopping ``cron`` may take (its runs' sessions closing).
CRON_STOP_SECONDS = 15.0
#: Connections a host serves beyond ``daemon.max_connections`` (the front's request link, and slack).
HOST_SPARE_CONNECTIONS = 8
#: A host restarted more often than this in the period is left stopped (its failure shows in the tree).
HOST_MAX_RESTARTS = 5
HOST_RESTART_PERIOD = 60.0


@asynccontextmanager
async def open_daemon_tree(
    paths: DaemonPaths, config: Config, runtime: RuntimeDir, request_stop: Callable[[str], None],
    *, host_index: int | None = None,
) -> AsyncIterator[ActorSystem]:
    """Build and run the daemon's whole tree; leaving the block stops it in reverse start order.

    Args:
        paths: the daemon's files (a host's, for a session-host process).
        config: the whole configuration.
        runtime: the runtime directory every session's temp and sandbox directories live in.
        request_stop: what ``hermes-actors stop`` calls (with a reason) to stop the daemon.
        host_index: which session host this process is (``actors.platform.daemon.cluster.hosts``); None for the
            daemon itself.

    Raises:
        SpawnFailed (an ActorError): a part refused to start (the control socket could not be
            bound, the API's key settings are unsafe ...); StoreError: the database cannot open.
    """
    section = config.daemon
    async with (
        trio.open_nursery() as warming,
        open_launcher(config.sandbox) as launcher,
        open_actor_system(shutdown_reason="daemon shutdown") as system,
    ):
        # The model's SDK (a third of a start's CPU) loads in a worker thread once the control socket
        # listens: the socket answers without it, and a first turn seconds later does not wait for it.
        serving = trio.Event()
        model = config.model
        warming.start_soon(_preload_once_serving, serving, resolve_api_mode(model.api_mode, model.provider, model.base_url))
        jails = DaemonJails(
            config=config.sandbox, runtime=runtime, home=str(paths.home), launcher=launcher,
            daemon_paths=hidden_daemon_paths(paths.home, paths.socket), hidden_home=str(hidden_root(paths.home)),
        )
        log_jail_status(config.sandbox, launcher.status)
        front = host_index is None
        several = section.hosts > 1
        holder = None if not several else "front" if host_index is None else host_name(host_index)
        store = make_store(config.store, paths.home, holder)
        # Not restarted: every session holds this store, and a closed store cannot be reopened.
        await system.root.start_child(
            ChildSpec(
                "store", functools.partial(StoreActor, store), RestartType.TEMPORARY,
                shutdown_timeout=section.shutdown_timeout_seconds,
            )
        )
        # Keys may sit in HERMES_ACTORS_HOME/.env; the daemon's environment wins. Read here, and again
        # for a new session when the file changed (config_reload).
        stamps = await trio.to_thread.run_sync(FileStamps.read, paths.home)
        environ = {**await trio.to_thread.run_sync(load_env_file, paths.home), **os.environ}
        # A session host reaches the MCP servers through the front's one copy of each (mcp_relay).
        relay_mcp = not front and several
        # The order completions' work runs in (the API's), which sessions' provider calls also keep.
        firsts = FirstTokens()
        sessions, reloader, added_platforms = await _start_sessions(
            system, store, config, paths.home, jails, environ, stamps, relay_mcp=relay_mcp, firsts=firsts
        )
        store.leases.on_lost(functools.partial(sessions.evict, reason="its lease was lost (database connection)"))
        outbound = OutboundRegistry()
        if not front:
            front_address = os.environ.get(FRONT_ADDRESS_VARIABLE)
            if front_address:
                await store.leases.advertise(front_address)
            service = ControlService(
                system=system, paths=paths, config=section, request_stop=request_stop,
                store=store, sessions=sessions, jails=jails, outbound=outbound, config_source=reloader,
            )
            # The front's own clients each hold one attachment link here, and it has its request link.
            served = attrs.evolve(section, max_connections=section.max_connections + HOST_SPARE_CONNECTIONS)
            await system.root.start_child(ChildSpec("control", lambda: ControlServer(paths, service, served)))
            serving.set()
            yield system
            return
        scripts = CronScripts(paths.home, jails, environ, CRON_SCRIPT_TIMEOUT_SECONDS)
        await _start_cron(system, store, sessions, outbound, scripts)
        await _start_curator(system, sessions)
        if config.platforms.any_chat_enabled:
            register_send_message(sessions.deps.registry, outbound, config.approvals)
        state = paths.home / "state"
        await system.root.start_child(ChildSpec(PAIRING, lambda: PairingActor(state / "pairing.json")))
        secret = _peer_secret(config, environ)
        peers = PeerRouter(secret, section.max_frame_bytes) if secret is not None else None
        if peers is not None:
            # Where a session ran is forgotten once its owner gives the lease back (NOTIFY).
            store.leases.on_released(peers.forget)
        router = _host_router(config) if several else None
        service = ControlService(
            system=system, paths=paths, config=section, request_stop=request_stop,
            store=store, sessions=sessions, jails=jails, outbound=outbound, peers=peers, hosts=router,
            config_source=reloader,
        )
        advertised: list[str] = []
        if secret is not None:

            async def advertise(address: str) -> None:
                advertised.append(address)
                await store.leases.advertise(address)

            await system.root.start_child(ChildSpec("cluster", lambda: PeerListener(service, section, secret, advertise)))
        if router is not None:
            # The hosts' leases name the front's peer address: a peer forwards to the front, which routes.
            await _start_hosts(system, paths, config, router, advertised[-1] if advertised else None)
        # Started before the control socket listens, so a client that connects at once finds platform/<name>
        # (the bots connect in the background; the API has bound its port).
        platforms = _platform_children(
            system, sessions, config, environ, outbound, state, service, firsts, added_platforms
        )
        if platforms:
            await system.root.start_child(
                ChildSpec("platform", lambda: Supervisor(platforms, kind="platform", per_child_intensity=True))
            )
        await system.root.start_child(ChildSpec("control", lambda: ControlServer(paths, service, section)))
        serving.set()
        yield system


async def _preload_once_serving(serving: trio.Event, api_mode: str) -> None:
    """Load the SDK ``api_mode`` is spoken through once ``serving`` is set. A tree that fails to start
    raises out of the nursery this runs in, which cancels the wait."""
    await serving.wait()
    await preload_sdk(api_mode)


def _host_router(config: Config) -> HostRouter:
    section = config.daemon
    return HostRouter(
        Codec(c.ClientMessage, max_frame_bytes=section.max_frame_bytes),
        Codec(c.DaemonMessage, max_frame_bytes=REPLY_FRAME_LIMIT),
        HOST_START_SECONDS,
    )


async def _start_hosts(
    system: ActorSystem, paths: DaemonPaths, config: Config, router: HostRouter, front_address: str | None
) -> None:
    """Start ``hosts`` under the root, one ``host:<n>`` per ``daemon.hosts`` (each serving on its own
    once started); ``router`` learns of each as it serves. ``front_address`` is the front's peer address,
    which the hosts register with their leases.

    Lease files of an earlier run are removed first: no host of this home runs yet (the front holds
    the instance lock), so none is held.
    """
    if config.store.url is None:
        await trio.to_thread.run_sync(_remove_lease_files, lease_directory(paths.home))
    section = config.daemon
    environ = dict(os.environ)
    if front_address is not None:
        environ[FRONT_ADDRESS_VARIABLE] = front_address
    children = [
        ChildSpec(
            host_name(index),
            functools.partial(HostActor, HostPaths(paths.home, index), router, environ, section.shutdown_timeout_seconds),
            shutdown_timeout=section.shutdown_timeout_seconds + 2 * HOST_KILL_GRACE_SECONDS,
        )
        for index in range(1, section.hosts + 1)
    ]
    # A host that keeps failing (a bad interpreter, a store it cannot open) stops being restarted
    # after this many in the period, and the daemon says so in its tree, rather than looping.
    hosts = Supervisor(children, kind=HOSTS, max_restarts=HOST_MAX_RESTARTS, period=HOST_RESTART_PERIOD, per_child_intensity=True)
    await system.root.start_child(ChildSpec(HOSTS, lambda: hosts, RestartType.TEMPORARY))


def _remove_lease_files(directory: Path) -> None:
    for leftover in directory.glob("*.lease"):
        leftover.unlink(missing_ok=True)


def _peer_secret(config: Config, environ: Mapping[str, str]) -> bytes | None:
    """The peer link's secret when ``daemon.cluster_listen`` is set, else None.

    Raises:
        ValueError: the peer link is asked for without a PostgreSQL store, or without its secret.
    """
    if config.daemon.cluster_listen is None:
        return None
    if config.store.url is None:
        raise ValueError("daemon.cluster_listen needs store.url: daemons share sessions through PostgreSQL")
    return peer_secret(environ)


async def _start_sessions(
    system: ActorSystem, store: SqlSessionStore, config: Config, home: Path, jails: DaemonJails,
    environ: Mapping[str, str], stamps: FileStamps, *, relay_mcp: bool = False, firsts: FirstTokens | None = None,
) -> tuple[SessionService, ConfigReloader, tuple[PluginPlatform, ...]]:
    """Start ``providers``, ``mcp`` (or, with ``relay_mcp``, ``mcp-relay`` to the front's) and ``sessions``
    under the root; the service the front doors use, what re-reads the configuration for its new
    sessions (``config`` and ``environ`` were read at ``stamps``), and the platforms the plugins added.

    Each provider's keys (its usual variable or ``model.api_key_env``, then
    ``credential_pool.extra_keys``) come from ``environ``; a provider with several keys gets a
    credential pool every session shares, so a key that hits a limit rotates daemon-wide.
    """
    clients = await ClientPool.create(config.streaming)
    web_client = open_web_client(config.web)
    # Not restarted: every session holds these clients, and a closed pool cannot be reopened, so a
    # new instance could not give them back. Stopping it is the daemon's stop.
    await system.root.start_child(
        ChildSpec("providers", functools.partial(ProvidersActor, clients, web_client), RestartType.TEMPORARY)
    )
    metadata = await ModelMetadata.open(home / "cache", config.model)
    # The web tools' SEARXNG_URL and Brave key may sit in HERMES_ACTORS_HOME/.env, as in Hermes.
    toolbox = build_toolbox(config, web_client, environ=environ, config_path=home / "config.yaml")
    # Before MCP and the sessions: a plugin's tools are in the registry before any tool list is frozen.
    extensions = await load_extensions(config, toolbox.registry)
    # After the plugins: their providers' key variables are among those read.
    keys = load_provider_keys(config, environ)
    # Before sessions, so stopped after them; its start returns at once (servers connect on their own:
    # a slow or dead one must not hold up the daemon, docs/DECISIONS.md#d-mcp-never-blocks). Its tools
    # join the registry as each server gets ready; a session takes those registered when its tool list
    # is frozen.
    if relay_mcp:
        if any(entry.enabled for entry in config.mcp_servers.values()):
            front = FrontMcp(DaemonPaths(home))
            await system.root.start_child(ChildSpec(MCP_RELAY, lambda: McpRelay(front, toolbox.registry)))
    else:
        mcp_deps = McpDeps(registry=toolbox.registry, environ=dict(os.environ), jails=jails)
        await system.root.start_child(
            ChildSpec(
                MCP, lambda: McpSupervisor(config.mcp_servers, mcp_deps), RestartType.TEMPORARY,
                shutdown_timeout=config.daemon.shutdown_timeout_seconds,
            )
        )

    def connector(config: Config, keys: ProviderKeys) -> PooledConnector:
        return PooledConnector(clients, config.streaming, metadata, default_key=keys.key_for)

    reloader = ConfigReloader(home, config, stamps, connector)
    zone = await trio.to_thread.run_sync(user_zone, config.timezone)
    deps = SessionDeps(
        config=config,
        home=home,
        registry=toolbox.registry,
        connector=connector(config, keys),
        store=store,
        metadata=metadata,
        pools=keys.pools,
        approvals=toolbox.terminal.approvals,
        jails=jails,
        keys=keys,
        zone=zone,
        # Outside every jail; never snapshot the user's whole home (Hermes refuses it too).
        checkpoints=Checkpoints(home / "checkpoints", frozenset({Path.home()})),
        hooks=extensions.hooks,
        plugins=extensions.plugins,
        pace=firsts.tail if firsts is not None else None,
    )
    section = config.daemon
    await system.root.start_child(
        ChildSpec(
            SESSIONS,
            lambda: SessionsSupervisor(section.hibernate_after_seconds),
            shutdown_timeout=section.shutdown_timeout_seconds,
        )
    )
    service = SessionService(
        deps, system.registry, section, delegate_factory=lambda setup: delegate_capability(setup, config.delegation),
        refresh_deps=reloader.refresh,
    )
    return service, reloader, extensions.platforms


async def _start_cron(
    system: ActorSystem, store: SqlSessionStore, sessions: SessionService, outbound: OutboundRegistry,
    scripts: CronScripts,
) -> None:
    """Start ``cron`` under the root (after ``sessions``, so stopped before them): scheduled jobs,
    each run a ``cron`` session, answers sent through the platforms connected then."""
    zone = sessions.deps.zone
    assert zone is not None  # Invariant: the daemon's sessions are given the user's zone (_start_sessions).
    runner = SessionJobRunner(sessions, str(Path.home()), CRON_TIME_BUDGET_SECONDS, scripts)

    def cron() -> CronActor:
        return CronActor(StoreJobBook(store, zone), runner, outbound.deliver, zone, lambda: datetime.now(timezone.utc))

    # Stopping it cancels the runs under way: each closes its session (shielded, bounded) first.
    await system.root.start_child(ChildSpec(CRON, cron, shutdown_timeout=CRON_STOP_SECONDS))
    register_cronjob(sessions.deps.registry, lambda: system.lookup(CRON), sessions.deps.config.approvals.timeout, scripts)


async def _start_curator(system: ActorSystem, sessions: SessionService) -> None:
    """Start ``curator`` under the root (after ``cron``, whose jobs' skills it must not archive): the
    skills curator, on its schedule and on ``skills curate``."""

    async def cron_skills() -> set[str]:
        try:
            views = await system.lookup(CRON).ask(ListJobs())
        except ActorError as exc:
            raise CurationError("the cron jobs could not be read") from exc
        return {name for view in views for name in view.job.skills}

    def curator() -> CuratorActor:
        return CuratorActor(lambda: sessions.deps, lambda: datetime.now(timezone.utc), cron_skills)

    await system.root.start_child(ChildSpec(CURATOR, curator))


def _platform_children(
    system: ActorSystem, sessions: SessionService, config: Config, environ: Mapping[str, str],
    outbound: OutboundRegistry, state: Path, control: ControlService, firsts: FirstTokens,
    added: tuple[PluginPlatform, ...] = (),
) -> list[ChildSpec]:
    """The enabled front doors, to start under a ``platform`` supervisor below the root: ``platform/api``
    once it listens, ``platform/telegram``, ``platform/discord``, ``platform/slack``, ``platform/matrix``, ``platform/mattermost``, ``platform/signal``, ``platform/email``, ``platform/whatsapp`` and the plugins' (``added``) connecting in the
    background (never waited for).

    The supervisor counts restarts per platform: one that crashes too often is given up alone."""
    children = []
    pairing = functools.partial(_lookup, system, PAIRING)
    whatsapp = _whatsapp_factory(config, environ, sessions, outbound, state, pairing)
    if config.platforms.api_server.enabled:
        routes = whatsapp[1].routes() if whatsapp is not None else []
        children.append(ChildSpec("api", _api_factory(sessions, config, environ, control, routes, firsts)))
    bots: tuple[tuple[str, Any, str], ...] = (
        ("telegram", config.platforms.telegram, TELEGRAM_TOKEN), ("discord", config.platforms.discord, DISCORD_TOKEN),
    )
    for name, section, variable in bots:
        if not section.enabled:
            continue
        token = environ.get(variable) or section.token
        if token:
            section = read_access_environment(section, environ)
            bot = _token_bot(name)
            children.append(ChildSpec(name, functools.partial(bot, section, token, sessions, outbound, state, pairing)))
        else:
            log.error("platforms.%s is enabled but no token is set (%s, or platforms.%s.token)", name, variable, name)
    slack = _slack_factory(config.platforms.slack, environ, sessions, outbound, state, pairing)
    if slack is not None:
        children.append(ChildSpec("slack", slack))
    matrix = _matrix_factory(config.platforms.matrix, environ, sessions, outbound, state, pairing)
    if matrix is not None:
        children.append(ChildSpec("matrix", matrix))
    mattermost = _mattermost_factory(config.platforms.mattermost, environ, sessions, outbound, state, pairing)
    if mattermost is not None:
        children.append(ChildSpec("mattermost", mattermost))
    signal = _signal_factory(config.platforms.signal, environ, sessions, outbound, state, pairing)
    if signal is not None:
        children.append(ChildSpec("signal", signal))
    email = _email_factory(config.platforms.email, environ, sessions, outbound, state, pairing)
    if email is not None:
        children.append(ChildSpec("email", email))
    if whatsapp is not None:
        children.append(ChildSpec("whatsapp", whatsapp[0]))
    children += _plugin_platforms(config, added, sessions, outbound, state, pairing, {spec.name for spec in children})
    bots_started = [spec for spec in children if spec.name != "api"]
    if bots_started:
        endpoint, said = speech_endpoint(config.stt, environ)
        log.info("voice notes: %s", said)
        transcriber = Transcriber(endpoint, config.stt.timeout_seconds, echo=config.stt.echo_transcripts) if endpoint else None
        children = [attrs.evolve(spec, factory=_hearing(spec.factory, transcriber)) if spec in bots_started else spec for spec in children]
    return children


def _hearing(factory: Callable[[], Any], transcriber: Transcriber | None) -> Callable[[], Any]:
    """``factory``, whose bot's desk hears voice notes through ``transcriber`` (one for every bot)."""

    def make() -> Any:
        bot = factory()
        if isinstance(bot, PlatformAdapter):  # not a plugin's platform that failed (it has no desk)
            bot.desk.transcriber = transcriber
        return bot

    return make


def _plugin_platforms(
    config: Config, added: tuple[PluginPlatform, ...], sessions: SessionService, outbound: OutboundRegistry,
    state: Path, pairing: Callable[[], ActorHandle[Any] | None], taken: set[str],
) -> list[ChildSpec]:
    """The children of the plugins' platforms enabled in ``platforms``; an enabled section no loaded plugin
    adds, or one named as a built-in child already started (``taken``), is logged instead."""
    by_name = {platform.name: platform for platform in added}
    children = []
    for name, section in config.platforms.plugin_platforms.items():
        if not section.enabled:
            continue
        platform = by_name.get(name)
        if platform is None:
            log.error(
                "platforms.%s is enabled but no loaded plugin adds platform %s (`hermes-actors plugins list` shows why)",
                name, name,
            )
            continue
        if name in taken:
            log.error("platform %s of plugin %s is not started: a built-in platform has that name", name, platform.plugin)
            continue
        setup = PlatformSetup(name, section, sessions, outbound, state, pairing)
        children.append(ChildSpec(name, plugin_platform_factory(platform, setup)))
    add_platform_names([spec.name for spec in children])
    return children


def _token_bot(name: str) -> Callable[..., Any]:
    """The adapter class of the Telegram or Discord bot. Each platform's package (with its client stack:
    websockets, Starlette ...) is imported only when that platform is configured, not at every start."""
    if name == "telegram":
        from actors.platform.telegram import TelegramBot  # noqa: PLC0415

        return TelegramBot
    from actors.platform.discord import DiscordBot  # noqa: PLC0415

    return DiscordBot


def _slack_factory(
    section: SlackConfig, environ: Mapping[str, str], sessions: SessionService, outbound: OutboundRegistry,
    state: Path, pairing: Callable[[], ActorHandle[Any] | None],
) -> Callable[[], SlackBot] | None:
    """The Slack app's factory when it is enabled with both its tokens (each variable wins over its key,
    and ``SLACK_HOME_CHANNEL`` over ``home_channel``, as Hermes reads them); None otherwise."""
    if not section.enabled:
        return None
    bot, app = environ.get(SLACK_TOKEN) or section.token, environ.get(SLACK_APP_TOKEN) or section.app_token
    if not bot or not app:
        missing = " and ".join(
            f"the {what} token ({variable}, or platforms.slack.{key})"
            for what, value, variable, key in (("bot", bot, SLACK_TOKEN, "token"), ("app-level", app, SLACK_APP_TOKEN, "app_token"))
            if not value
        )
        log.error("platforms.slack is enabled but %s is not set", missing)
        return None
    section = read_access_environment(section, environ)
    home = environ.get(SLACK_HOME, "").strip()
    if home:
        section = attrs.evolve(section, home_channel=home)
    from actors.platform.slack import SlackBot, SlackTokens  # noqa: PLC0415 - only a configured platform's (see _token_bot)

    return functools.partial(SlackBot, section, SlackTokens(bot, app), sessions, outbound, state, pairing)


def _matrix_factory(
    section: MatrixConfig, environ: Mapping[str, str], sessions: SessionService, outbound: OutboundRegistry,
    state: Path, pairing: Callable[[], ActorHandle[Any] | None],
) -> Callable[[], MatrixBot] | None:
    """The Matrix bot's factory when it is enabled with its homeserver and token (``MATRIX_HOMESERVER``,
    ``MATRIX_ACCESS_TOKEN``, ``MATRIX_USER_ID`` and ``MATRIX_HOME_ROOM`` each win over its key, as Hermes
    reads them); None otherwise."""
    if not section.enabled:
        return None
    token = environ.get(MATRIX_TOKEN) or section.token
    changes: dict[str, Any] = {key: environ[variable].strip() for key, variable in (
        ("homeserver", MATRIX_HOMESERVER), ("user_id", MATRIX_USER), ("home_channel", MATRIX_HOME)) if environ.get(variable, "").strip()}
    section = read_access_environment(attrs.evolve(section, **changes), environ)
    if not token or not section.homeserver:
        what = "the access token (MATRIX_ACCESS_TOKEN, or platforms.matrix.token)" if not token else "the homeserver (MATRIX_HOMESERVER, or platforms.matrix.homeserver)"
        log.error("platforms.matrix is enabled but %s is not set", what)
        return None
    from actors.platform.matrix import MatrixBot  # noqa: PLC0415 - only a configured platform's (see _token_bot)

    return functools.partial(MatrixBot, section, token, sessions, outbound, state, pairing)


def _mattermost_factory(
    section: MattermostConfig, environ: Mapping[str, str], sessions: SessionService, outbound: OutboundRegistry,
    state: Path, pairing: Callable[[], ActorHandle[Any] | None],
) -> Callable[[], MattermostBot] | None:
    """The Mattermost bot's factory when it is enabled with its server and token (``MATTERMOST_URL``,
    ``MATTERMOST_TOKEN`` and ``MATTERMOST_HOME_CHANNEL`` each win over its key, as Hermes reads them);
    None otherwise."""
    if not section.enabled:
        return None
    token = environ.get(MATTERMOST_TOKEN) or section.token
    changes: dict[str, Any] = {key: environ[variable].strip() for key, variable in (
        ("url", MATTERMOST_URL), ("home_channel", MATTERMOST_HOME)) if environ.get(variable, "").strip()}
    section = read_access_environment(attrs.evolve(section, **changes), environ)
    if not token or not section.url:
        what = "the bot's token (MATTERMOST_TOKEN, or platforms.mattermost.token)" if not token else "the server (MATTERMOST_URL, or platforms.mattermost.url)"
        log.error("platforms.mattermost is enabled but %s is not set", what)
        return None
    from actors.platform.mattermost import MattermostBot  # noqa: PLC0415 - only a configured platform's (see _token_bot)

    return functools.partial(MattermostBot, section, token, sessions, outbound, state, pairing)


def _email_factory(
    section: EmailConfig, environ: Mapping[str, str], sessions: SessionService, outbound: OutboundRegistry,
    state: Path, pairing: Callable[[], ActorHandle[Any] | None],
) -> Callable[[], EmailBot] | None:
    """The email bot's factory when it is enabled with its account and servers (Hermes's ``EMAIL_*``
    variables each win over their key); None otherwise."""
    if not section.enabled:
        return None
    section = read_email_environment(section, environ)
    missing = section.missing()
    if missing:
        log.error("platforms.email is enabled but %s %s not set (or their keys in platforms.email)", ", ".join(missing), "is" if len(missing) == 1 else "are")
        return None
    from actors.platform.email import EmailBot  # noqa: PLC0415 - only a configured platform's (see _token_bot)

    return functools.partial(EmailBot, section, sessions, outbound, state, pairing)
def _whatsapp_factory(
    config: Config, environ: Mapping[str, str], sessions: SessionService, outbound: OutboundRegistry,
    state: Path, pairing: Callable[[], ActorHandle[Any] | None],
) -> tuple[Callable[[], WhatsAppBot], WhatsAppWebhook] | None:
    """The WhatsApp bot's factory and its webhook when it is enabled with its number's id and access token
    (each ``WHATSAPP_CLOUD_*`` variable wins over its key, as Hermes reads them); None otherwise."""
    section = config.platforms.whatsapp_cloud
    if not section.enabled:
        return None
    section = read_access_environment(section, environ)
    changes: dict[str, Any] = {key: environ[variable].strip() for key, variable in WHATSAPP_VARIABLES.items() if environ.get(variable, "").strip()}
    section = attrs.evolve(section, **changes)
    if not section.token or not section.phone_number_id:
        what = ("the access token (WHATSAPP_CLOUD_ACCESS_TOKEN, or platforms.whatsapp_cloud.token)" if not section.token
                else "the phone number's id (WHATSAPP_CLOUD_PHONE_NUMBER_ID, or platforms.whatsapp_cloud.phone_number_id)")
        log.error("platforms.whatsapp_cloud is enabled but %s is not set", what)
        return None
    if not config.platforms.api_server.enabled:
        log.error("platforms.whatsapp_cloud: its webhook is served by the API server, which is off "
                  "(platforms.api_server.enabled): the bot can send, but no message from a user arrives")
    for key, variable in (("app_secret", "WHATSAPP_CLOUD_APP_SECRET"), ("verify_token", "WHATSAPP_CLOUD_VERIFY_TOKEN")):
        if not getattr(section, key):
            log.warning("platforms.whatsapp_cloud: no %s (%s): the webhook refuses %s", key, variable,
                        "every event" if key == "app_secret" else "Meta's subscription handshake")
    from actors.platform.whatsapp import WhatsAppBot, WhatsAppWebhook  # noqa: PLC0415 - see _token_bot

    webhook = WhatsAppWebhook(section.webhook_path, section.app_secret, section.verify_token)
    token = section.token
    section = attrs.evolve(section, token=None, app_secret=None, verify_token=None)  # the bot holds only its token
    return functools.partial(WhatsAppBot, section, token, webhook, sessions, outbound, state, pairing), webhook


def _lookup(system: ActorSystem, path: str) -> ActorHandle[Any] | None:
    try:
        return system.lookup(path)
    except ActorNotFound:
        return None


def _api_factory(
    sessions: SessionService, config: Config, environ: Mapping[str, str], control: ControlService,
    platform_routes: Sequence[BaseRoute], firsts: FirstTokens,
) -> Callable[[], ApiServer]:
    # Here, not at the top: hypercorn and Starlette are loaded only by a daemon that serves the API.
    from actors.platform.api.server import ApiServer  # noqa: PLC0415

    found = environ.get(KEY_VARIABLE)
    api_environ = {KEY_VARIABLE: found} if found else {}
    # Only the variables the API reads: its key and the webhooks' secrets.
    for route in config.platforms.webhook.routes.values():
        if route.secret_env and environ.get(route.secret_env):
            api_environ[route.secret_env] = environ[route.secret_env]
    section = config.platforms.api_server
    models = (config.model.default,)

    def api() -> ApiServer:
        return ApiServer(
            sessions, section, config.daemon.max_running_turns, models, api_environ, webhooks=config.platforms.webhook,
            control=control, platform_routes=platform_routes, firsts=firsts,
        )

    return api


def _signal_factory(
    section: SignalConfig, environ: Mapping[str, str], sessions: SessionService, outbound: OutboundRegistry,
    state: Path, pairing: Callable[[], ActorHandle[Any] | None],
) -> Callable[[], SignalBot] | None:
    """The Signal bot's factory when it is enabled with its account (``SIGNAL_HTTP_URL``, ``SIGNAL_ACCOUNT``,
    ``SIGNAL_HOME_CHANNEL`` and ``SIGNAL_REACTIONS`` each win over its key, as Hermes reads them); None
    otherwise. ``SIGNAL_GROUP_ALLOWED_USERS`` holds groups in Hermes (their ids, or ``*``): it is read as
    ``group_allowed_chats``."""
    if not section.enabled:
        return None
    changes: dict[str, Any] = {key: environ[variable].strip() for key, variable in (
        ("http_url", SIGNAL_URL), ("account", SIGNAL_ACCOUNT), ("home_channel", SIGNAL_HOME)) if environ.get(variable, "").strip()}
    reactions = environ.get(SIGNAL_REACTIONS, "").strip().lower()
    if reactions:
        changes["reactions"] = reactions not in ("false", "0", "no", "off")
    groups = environ.get(SIGNAL_GROUPS, "").strip()
    if groups:
        changes["group_allowed_chats"] = tuple(part.strip() for part in groups.split(",") if part.strip())
    section = read_access_environment(attrs.evolve(section, **changes), {k: v for k, v in environ.items() if k != SIGNAL_GROUPS})
    # A group's chat is ``group:ID`` here; Hermes lists the bare ids.
    chats: dict[str, Any] = {"group_allowed_chats": tuple(
        chat if chat == "*" or chat.startswith("group:") else f"group:{chat}" for chat in section.group_allowed_chats)}
    section = attrs.evolve(section, **chats)
    if not section.account:
        log.error("platforms.signal is enabled but its account is not set (SIGNAL_ACCOUNT, or platforms.signal.account)")
        return None
    from actors.platform.signal import SignalBot  # noqa: PLC0415 - only a configured platform's (see _token_bot)

    return functools.partial(SignalBot, section, sessions, outbound, state, pairing)

