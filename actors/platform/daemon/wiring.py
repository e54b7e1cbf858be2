"""Starting the provider clients and the ``sessions`` part of the tree for the daemon.

What every session shares is built here once: the tool registry, the client
pool behind a connector, model metadata, and the provider keys from the
daemon's environment and ``HERMES_ACTORS_HOME/.env`` (kept out of logs).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import attrs

from actors.platform.backend import SessionsBackend
from actors.platform.daemon.providers_actor import ProvidersActor
from actors.session.options import SessionDeps, SessionOptions
from actors.session.service import SessionService, SessionsSupervisor
from actors.subagent.delegate import delegate_capability
from actors.platform.daemon.toolbox import build_toolbox
from config.daemon import DaemonConfig
from config.loader import Config, load_env_file
from messages.control import CreateSession
from providers.clients import ClientPool
from providers.metadata import ModelMetadata
from providers.recovery.connector import PooledConnector
from providers.recovery.fallback import ProviderTarget
from store.protocol import SessionStore
from actors.handle import ActorHandle
from actors.registry import ActorRegistry
from supervisor import ActorSystem, ChildSpec, SupervisorHandle
from tools.jail.runtime import DaemonJails
from tools.web import open_web_client

__all__ = ["KEY_VARIABLES", "LiveSupervisor", "SessionsParts", "options_from_request", "provider_key", "start_sessions"]

#: The environment variable holding each provider's key.
KEY_VARIABLES: Mapping[str, str] = MappingProxyType(
    {
        "openai": "OPENAI_API_KEY",
        "anthropic": "ANTHROPIC_API_KEY",
        "openrouter": "OPENROUTER_API_KEY",
        "custom": "OPENAI_API_KEY",
    }
)


class LiveSupervisor:
    """The ``sessions`` supervisor as whichever instance is running now.

    The root restarts ``sessions`` with a fresh actor if it ever gives up; a
    handle taken at startup would then point at the dead one. This looks the
    current one up in the registry on every call instead.
    """

    def __init__(self, registry: ActorRegistry, path: str) -> None:
        self._registry = registry
        self.path = path

    def _current(self) -> SupervisorHandle:
        handle = self._registry.lookup(self.path)
        assert isinstance(handle, SupervisorHandle)
        return handle

    async def start_child(self, spec: ChildSpec) -> ActorHandle[Any]:
        """Start a session under the running supervisor."""
        return await self._current().start_child(spec)

    async def terminate_child(self, name: str, reason: str, *, requested_by: str = "operator") -> bool:
        """Stop a session under the running supervisor."""
        return await self._current().terminate_child(name, reason, requested_by=requested_by)


@attrs.frozen
class SessionsParts:
    """What the control service needs of the sessions: the service and an options builder."""

    backend: SessionsBackend
    options: Callable[[CreateSession], Any]


def options_from_request(request: CreateSession) -> SessionOptions:
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
    )


def provider_key(secrets: Mapping[str, str]) -> Callable[[ProviderTarget], str | None]:
    """The default key lookup of the connector: the provider's usual variable."""

    def key_for(target: ProviderTarget) -> str | None:
        variable = "ANTHROPIC_API_KEY" if target.api_mode == "anthropic_messages" else KEY_VARIABLES.get(target.provider)
        return secrets.get(variable) if variable else None

    return key_for


async def start_sessions(
    system: ActorSystem, store: SessionStore, config: Config, home: Path, section: DaemonConfig, jails: DaemonJails
) -> SessionsParts:
    """Start ``providers`` and ``sessions`` under the root; the service the control socket uses.

    ``jails`` is what every session's jail shares (the daemon's launcher and runtime directory).
    """
    secrets = {**load_env_file(home), **{k: v for k, v in os.environ.items() if k.endswith("_API_KEY")}}
    clients = await ClientPool.create(config.streaming)
    web_client = open_web_client(config.web)
    providers = ProvidersActor(clients, web_client)
    await system.root.start_child(ChildSpec("providers", lambda: providers))
    metadata = await ModelMetadata.open(home / "cache", config.model)
    toolbox = build_toolbox(config, web_client, environ=os.environ)
    deps = SessionDeps(
        config=config,
        home=home,
        registry=toolbox.registry,
        connector=PooledConnector(clients, config.streaming, metadata, default_key=provider_key(secrets)),
        store=store,
        metadata=metadata,
        secrets=secrets,
        approvals=toolbox.terminal.approvals,
        jails=jails,
    )
    await system.root.start_child(
        ChildSpec(
            "sessions",
            lambda: SessionsSupervisor(section.hibernate_after_seconds),
            shutdown_timeout=section.shutdown_timeout_seconds,
        )
    )
    supervisor = LiveSupervisor(system.registry, "sessions")
    service = SessionService(
        deps, supervisor, system.registry, section,  # type: ignore[arg-type]
        delegate_factory=lambda setup: delegate_capability(setup, config.delegation),
    )
    return SessionsParts(service, options_from_request)
