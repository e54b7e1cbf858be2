"""What a session is started with (its options, its spec) and what it is given
to work with (its dependencies, owned by the daemon and shared by every session)."""

from __future__ import annotations

import datetime
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

import attrs

from conversation.prompt.cache import PromptCache
from conversation.tool_list import ToolListCache
from config.loader import Config
from messages.chat import ChatMessage
from providers.metadata import ModelMetadata
from providers.recovery.credentials import CredentialPool
from providers.recovery.keys import ProviderKeys
from providers.recovery.policy import ProviderConnector
from store.protocol import SessionStore
from messages.control_services import PluginStatus
from tools.approval import ApprovalBook
from tools.checkpoints import Checkpoints
from tools.hooks import NO_HOOKS, HookRunner
from tools.jail.runtime import DaemonJails
from tools.jail.runtime import SessionRuntime
from tools.registry import ToolRegistry

if TYPE_CHECKING:
    from actors.session.context import CallContext
    from actors.session.model import SessionModel
    from actors.session.state import SessionState
    from actors.session.turn_parts import TokenMeter
    from tools.results import ToolResult

__all__ = ["DelegateFactory", "DelegateTask", "ParentSession", "SessionDeps", "SessionOptions", "SessionSpec"]


@attrs.frozen
class SessionOptions:
    """How one session is set up; fixed for its life (saved with its state).

    Attributes:
        cwd: the directory of the client that created it; its shell starts there.
        model / provider / base_url / api_mode: override config's ``model`` section.
        source: the platform: cli, api, telegram, discord, slack, matrix, webhook, cron or subagent (prompt hint,
            store column).
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
        limits: what its processes may use, by the names of ``sandbox.limits`` (None: those); only
            lower values take effect.
        one_shot: a ``chat -q`` session: it hibernates as soon as a turn is over and nobody watches.
        turn_time_budget_seconds / turn_token_budget: this session's own whole-turn budgets (a cron
            job's), in place of ``agent.turn_time_budget_seconds`` / ``agent.turn_token_budget``.
        cron_approvals: a cron job's own answer to its dangerous commands (deny or approve), in place of
            ``approvals.cron_mode``.
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
    limits: dict[str, int] | None = None
    one_shot: bool = False
    turn_time_budget_seconds: float | None = None
    turn_token_budget: int | None = None
    cron_approvals: str | None = None

    def time_budget(self, configured: float | None) -> float | None:
        """The seconds a turn may take: this session's own budget, else the configured one."""
        return self.turn_time_budget_seconds if self.turn_time_budget_seconds is not None else configured

    def token_budget(self, configured: int | None) -> int | None:
        """The tokens a turn may use: this session's own budget, else the configured one."""
        return self.turn_token_budget if self.turn_token_budget is not None else configured

    def to_state(self) -> dict[str, Any]:
        """JSON-ready form, for the session's saved state."""
        state = attrs.asdict(self)
        state["toolsets"] = list(self.toolsets) if self.toolsets is not None else None
        state["blocked_tools"] = sorted(self.blocked_tools)
        return state

    def model_name(self, config: Config) -> str:
        """The model this session talks to first."""
        return self.model or config.model.default

    def provider_name(self, config: Config, model: str | None = None) -> str:
        """The provider of ``model`` (default: :meth:`model_name`): the session's, else config's, else the one
        the model's id implies (:meth:`~config.providers.ModelConfig.provider_for`)."""
        return self.provider or config.model.provider_for(model or self.model_name(config), self.base_url)

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
        keys: the daemon's provider keys, to refuse a session whose provider has none before
            any request (None: not checked).
        jails: what the daemon's session jails share (runtime directory, launcher); None runs
            tools with full access (sessions run without a daemon: tests, benchmarks).
        tool_lists: the tool lists sessions were frozen with lately, shared by sessions offered the same.
        prompts: the system prompts ephemeral sessions were given lately, shared by those that would build the same.
        zone: the user's time zone (``config.timezone``), whose day the prompt and summaries carry; None:
            the daemon's local time.
        checkpoints: the daemon's shadow repositories of working directories (``checkpoints.*``); None: no
            snapshots are taken (sessions run without a daemon).
        hooks: the user's hooks (``hooks``, and the plugins'), fired by the sessions.
        plugins: every installed plugin's status, as the daemon loaded them.
        pace: awaited by an API session's provider call once its answer's first text is out: the daemon's HTTP API
            puts other completions' first tokens before the rest of this answer there (bounded; see
            ``actors.platform.api.firsts``). None: no wait.
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
    keys: ProviderKeys | None = None
    tool_lists: ToolListCache = attrs.field(factory=ToolListCache, eq=False, repr=False)
    prompts: PromptCache = attrs.field(factory=PromptCache, eq=False, repr=False)
    zone: ZoneInfo | None = None
    checkpoints: Checkpoints | None = None
    hooks: HookRunner = attrs.field(default=NO_HOOKS, eq=False, repr=False)
    plugins: tuple[PluginStatus, ...] = ()
    pace: Callable[[], Awaitable[None]] | None = attrs.field(default=None, eq=False, repr=False)

    def today(self) -> datetime.date:
        """The user's date now."""
        return datetime.datetime.now(self.zone).date()


#: The delegate_task capability: (the calling tool's context, the tool's arguments) -> the tool result.
DelegateTask = Callable[["CallContext", dict[str, Any]], Awaitable["ToolResult"]]


@attrs.frozen
class ParentSession:
    """What a session's delegate_task capability sees of it: read each time a task is delegated,
    so children get the tools and the provider the session has then.

    Attributes:
        deps / session_id: as the session's.
        state: its durable state (options, tool list).
        model: its provider chain (children use the target in use now).
        runtime: its jail and directories, which its children share.
    """

    deps: SessionDeps
    session_id: str
    state: SessionState
    model: SessionModel
    runtime: SessionRuntime


#: Builds a session's delegate_task capability when the session starts.
DelegateFactory = Callable[[ParentSession], DelegateTask]


@attrs.frozen
class SessionSpec:
    """What a session actor is built from; fixed before it starts (a restart builds a new actor
    from the spec with ``options=None``, restoring from the store).

    Attributes:
        deps: the daemon's shared dependencies.
        session_id: the stable id.
        options: for a new session; None to restore one from the store.
        ephemeral_system: a client's system layer for this session (never stored).
        seed: earlier turns a new session starts with (an API client's conversation),
            alternating user/assistant and ending on the assistant.
        delegate: builds the session's delegate_task capability (None: not offered).
        parent_meter: a parent turn's token meter (a subagent's turns count into it).
        runtime: a parent's jail and directories a subagent runs under (never wider than its
            parent's); None: the session opens its own when it starts.
        replay_size / subscriber_capacity: its event hub's replay buffer and per-subscriber buffer.
        ephemeral: one request's session (an HTTP API completion without a session name): it takes no
            lease and writes nothing while it only talks; it is stored when it first needs its row (a
            tool call, a compression) or, at the latest, already ended when it stops; its system prompt may be
            one built a moment ago for another (:mod:`conversation.prompt.cache`).
    """

    deps: SessionDeps
    session_id: str
    options: SessionOptions | None
    ephemeral_system: str | None = None
    seed: Sequence[ChatMessage] = ()
    delegate: DelegateFactory | None = None
    parent_meter: TokenMeter | None = None
    runtime: SessionRuntime | None = None
    replay_size: int = 1000
    subscriber_capacity: int = 256
    ephemeral: bool = False
