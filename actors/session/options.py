"""What a session is started with (its options) and what it is given to work
with (its dependencies, owned by the daemon and shared by every session)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from config.loader import Config
from providers.metadata import ModelMetadata
from providers.recovery.credentials import CredentialPool
from providers.recovery.policy import ProviderConnector
from store.protocol import SessionStore
from tools.approval import ApprovalBook
from tools.jail.runtime import DaemonJails
from tools.registry import ToolRegistry

__all__ = ["SessionDeps", "SessionOptions"]


@attrs.frozen
class SessionOptions:
    """How one session is set up; fixed for its life (saved with its state).

    Attributes:
        cwd: the directory of the client that created it; its shell starts there.
        model / provider / base_url / api_mode: override config's ``model`` section.
        source: the platform: cli, api, cron or subagent (prompt hint, store column).
        title: optional unique title.
        interactive: False for subagents and one-shot API calls (no clarify; approvals denied).
        toolsets: enabled toolsets (None: the registry's defaults).
        blocked_tools: tools never offered (a subagent's blocked list).
        max_iterations: iteration budget per turn (None: ``agent.max_turns``).
        parent_session_id / depth: set for subagents.
        system_prompt: a prompt given from outside (a subagent's); None builds the usual one.
        load_context_files / use_memory: prompt layers a subagent goes without.
        auto_approve: approve dangerous commands without asking (subagents, by config).
        sandbox: the sandbox mode its tools run under (``sandbox.mode`` when None); settled to the
            resolved mode when the session is created, so a restarted or woken session keeps it.
    """

    cwd: str
    model: str | None = None
    provider: str | None = None
    base_url: str | None = None
    api_mode: str | None = None
    source: str = "cli"
    title: str | None = None
    interactive: bool = True
    toolsets: tuple[str, ...] | None = None
    blocked_tools: frozenset[str] = frozenset()
    max_iterations: int | None = None
    parent_session_id: str | None = None
    depth: int = 0
    system_prompt: str | None = None
    load_context_files: bool = True
    use_memory: bool = True
    auto_approve: bool = False
    sandbox: str | None = None

    def to_state(self) -> dict[str, Any]:
        """JSON-ready form, for the session's saved state."""
        state = attrs.asdict(self)
        state["toolsets"] = list(self.toolsets) if self.toolsets is not None else None
        state["blocked_tools"] = sorted(self.blocked_tools)
        return state

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> SessionOptions:
        """Rebuild options saved by :meth:`to_state` (unknown keys ignored)."""
        known = {field.name for field in attrs.fields(cls)}
        values = {key: value for key, value in state.items() if key in known}
        if values.get("toolsets") is not None:
            values["toolsets"] = tuple(values["toolsets"])
        values["blocked_tools"] = frozenset(values.get("blocked_tools") or ())
        return cls(**values)


@attrs.frozen
class SessionDeps:
    """Everything sessions share, created once by the daemon and passed down.

    Attributes:
        config: the loaded configuration.
        home: HERMES_ACTORS_HOME.
        registry: the tool registry.
        connector: builds provider adapters over the shared SDK clients.
        store: the session store (SQLite in the daemon, in-memory in tests).
        pools: credential pools by provider name.
        metadata: model limits (context length, output cap).
        secrets: provider keys from the environment and ``.env`` (never logged).
        approvals: the terminal's "allowed for this session" book, saved with each
            session's state so a restarted daemon keeps what the user allowed.
        jails: what the daemon's session jails share (runtime directory, launcher); None runs
            tools with full access (sessions run without a daemon: tests, benchmarks).
    """

    config: Config
    home: Path
    registry: ToolRegistry
    connector: ProviderConnector
    store: SessionStore
    pools: Mapping[str, CredentialPool] = attrs.Factory(dict)
    metadata: ModelMetadata | None = None
    secrets: Mapping[str, str] = attrs.field(factory=dict, repr=False)
    approvals: ApprovalBook | None = None
    jails: DaemonJails | None = None
