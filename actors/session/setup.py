"""A session's durable setup: created once (system prompt, frozen tool list,
provider chain) or restored from the store, and saved back after each turn.

The system prompt and the tool list are frozen for the session's life: a
``check_fn`` flipping mid-session must not change what the model was given
(that would break the provider's prompt cache).
"""

from __future__ import annotations

import functools
import json
import logging
import secrets
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from actors.session.compression import ContextCompressor
from actors.session.errors import CompressionError
from actors.session.guardrails import ToolCallGuardrailController
from actors.session.history import repair_on_load
from actors.session.hub import EventHub
from actors.session.options import SessionDeps, SessionOptions
from actors.session.prompt.builder import PromptSpec, build_system_prompt
from messages.events import StatusUpdate
from providers.metadata import parse_overflow_message, rough_tokens
from providers.recovery.fallback import FallbackChain, ProviderTarget
from providers.recovery.policy import stream_with_recovery
from providers.types import ChatRequest, Usage
from config.sandbox import SANDBOX_MODES
from store.records import SessionMeta
from tools.background import ProcessTable
from tools.context import ShellState
from tools.jail.policy import SandboxMode, SandboxModeRefused, resolve_mode
from tools.jail.runtime import SessionRuntime, unjailed_runtime
from tools.memory import memory_prompt_block
from tools.todo import TodoList
from tools.toolsets import ToolsetCatalog

__all__ = ["SessionSetup", "new_session_id"]

log = logging.getLogger("hermes_actors.session.setup")

_READ_ONLY_TOOLS = frozenset({"read_file", "search_files", "web_search", "web_extract", "session_search"})
_DEFAULT_CONTEXT = 128_000


def new_session_id() -> str:
    """A fresh session id: short, unguessable, safe in paths."""
    return secrets.token_hex(6)


class SessionSetup:
    """Everything a session actor is built from, and what it saves.

    Args:
        deps: the daemon's shared dependencies.
        session_id: the stable id.
        options: for a new session; None to restore one from the store.
        delegate: the delegate_task capability (None where subagents are not offered).
        parent_meter: a parent turn's token meter (a subagent counts into it).
        ephemeral_system: a client's system layer for this session (never stored).
        seed: earlier turns a new session starts with (an API client's conversation),
            alternating user/assistant and ending on the assistant.
        runtime: a parent's jail and directories a subagent runs under (never wider than its parent's);
            None: the session opens its own when it starts.
    """

    def __init__(
        self,
        deps: SessionDeps,
        session_id: str,
        options: SessionOptions | None,
        *,
        delegate: Callable[..., Awaitable[str]] | None = None,
        parent_meter: Any = None,
        ephemeral_system: str | None = None,
        seed: list[dict[str, Any]] | None = None,
        replay_size: int = 1000,
        subscriber_capacity: int = 256,
        runtime: SessionRuntime | None = None,
    ) -> None:
        self.deps = deps
        self.session_id = session_id
        self.options = options
        self.delegate = delegate
        self.parent_meter = parent_meter
        self.ephemeral_system = ephemeral_system
        self.seed = list(seed or [])
        self.replay_size = replay_size
        self.subscriber_capacity = subscriber_capacity
        self.history: list[dict[str, Any]] = []
        self.tools: list[dict[str, Any]] = []
        self.tool_names: frozenset[str] = frozenset()
        self.emojis: dict[str, str] = {}
        self.shell = ShellState(cwd=options.cwd if options else str(Path.home()))
        self.todo = TodoList()
        self.processes = ProcessTable(deps.config.terminal.background)
        self.event_seq = 0
        self.turns = 0
        self.usage = Usage()
        self.compression_state: dict[str, Any] = {}
        self._lost_processes: list[dict[str, Any]] = []
        self._persisted = 0
        self._compressor: ContextCompressor | None = None
        self._context_override: int | None = None
        self.runtime = runtime

    # -- creation and restoring -------------------------------------------------------------------

    async def load_or_create(self) -> None:
        """Restore the session from the store, or create it there."""
        if self.options is None:
            await self._restore()
        else:
            await self._create(self.options)
        self._persisted = len(self.history)

    async def _create(self, options: SessionOptions) -> None:
        self.options = options = self._settle_mode(options, restored=False)
        self.tool_names, self.tools = self._freeze_tools(options)
        prompt = options.system_prompt
        if prompt is None:
            spec = PromptSpec(
                home=self.deps.home, cwd=Path(options.cwd), model=self.model, platform=_platform(options.source),
                tool_names=self.tool_names, load_context_files=options.load_context_files,
            )
            prompt = await build_system_prompt(spec, memory_block=self._memory_block(options))
        self.history = [{"role": "system", "content": prompt}, *self.seed]
        await self.deps.store.create_session(
            SessionMeta(id=self.session_id, parent_session_id=options.parent_session_id, source=options.source,
                        model=self.model, title=options.title, cwd=options.cwd)
        )
        await self.deps.store.append(self.session_id, self.history)
        await self.save_state(event_seq=0, turns=0, usage=Usage())

    async def _restore(self) -> None:
        loaded = await self.deps.store.load(self.session_id)
        state = loaded.state or {}
        options = SessionOptions.from_state(state.get("options") or {"cwd": loaded.info.cwd or str(Path.home())})
        self.options = self._settle_mode(options, restored=True)
        self.tools = list(state.get("tools") or [])
        self.tool_names = frozenset(state.get("tool_names") or [])
        if not self.tools:
            self.tool_names, self.tools = self._freeze_tools(self.options)
        repaired = repair_on_load(loaded.messages)
        if len(repaired) != len(loaded.messages) or repaired != loaded.messages:
            log.warning("session %s: history repaired on load (%d -> %d messages)", self.session_id, len(loaded.messages), len(repaired))
        self.history = repaired
        shell = state.get("shell") or {}
        self.shell = ShellState(cwd=shell.get("cwd") or self.options.cwd, env=dict(shell.get("env") or {}))
        self.todo = TodoList.from_dicts(state.get("todo") or [])
        self.event_seq = int(state.get("event_seq") or 0)
        self.turns = int(state.get("turns") or 0)
        self.usage = Usage(**(state.get("usage") or {}))
        self.compression_state = dict(state.get("compression") or {})
        if self.deps.approvals is not None:
            self.deps.approvals.restore(self.session_id, state.get("approvals") or [])
        self._lost_processes = [p for p in state.get("processes") or [] if p.get("running")]
        if repaired != loaded.messages:
            await self.deps.store.compact(self.session_id, repaired)

    def _settle_mode(self, options: SessionOptions, *, restored: bool) -> SessionOptions:
        """The options with the sandbox mode resolved, so it is stored and kept across restarts.

        A stored mode the daemon no longer allows (``sandbox.max_mode`` narrowed since) is narrowed to
        what it allows now, never kept wider.

        Raises:
            SandboxModeRefused: a new session asked for a mode the daemon does not allow.
        """
        config = self.deps.config.sandbox
        try:
            mode = resolve_mode(options.sandbox, config)
        except SandboxModeRefused as exc:
            if not restored:
                raise
            mode = SandboxMode(config.max_mode if options.sandbox in SANDBOX_MODES else config.mode)
            log.warning("session %s: %s; it runs %s now", self.session_id, exc, mode.value)
        return attrs.evolve(options, sandbox=mode.value)

    async def open_runtime(self) -> SessionRuntime:
        """The session's jail and directories: its parent's (a subagent), its own from the daemon, or
        full access where the session runs without a daemon."""
        if self.runtime is None:
            assert self.options is not None
            jails = self.deps.jails
            if jails is None:
                self.runtime = unjailed_runtime(self.deps.config.sandbox, self.deps.home, self.options.cwd)
            else:
                mode = SandboxMode(self.options.sandbox)
                self.runtime = await jails.open_session(self.session_id, mode, self.options.cwd)
        return self.runtime

    async def close_runtime(self) -> None:
        """Remove the session's own directories (a subagent leaves its parent's alone)."""
        jails = self.deps.jails
        if jails is not None and self.runtime is not None and self.runtime.owner == self.session_id:
            await jails.close_session(self.session_id)

    def reset_tools(self) -> list[str]:
        """Freeze the tool list anew from the registry (``/reset-tools``); returns the names."""
        assert self.options is not None
        self.tool_names, self.tools = self._freeze_tools(self.options)
        return sorted(self.tool_names)

    def _freeze_tools(self, options: SessionOptions) -> tuple[frozenset[str], list[dict[str, Any]]]:
        registry = self.deps.registry
        config = self.deps.config
        enabled = options.toolsets if options.toolsets is not None else config.tools.enabled_toolsets
        names = ToolsetCatalog(registry).select_tools(enabled, config.tools.disabled_toolsets)
        names = frozenset(n for n in names if n in registry and n not in options.blocked_tools)
        definitions = registry.get_definitions(names)
        offered = frozenset(d["function"]["name"] for d in definitions)
        self.emojis = {name: registry.get(name).emoji for name in offered if registry.get(name) is not None}
        return offered, definitions

    def _memory_block(self, options: SessionOptions) -> Callable[[Path], Awaitable[str]] | None:
        """MEMORY.md and USER.md for the prompt (read once, at creation)."""
        if not options.use_memory or "memory" not in self.tool_names:
            return None
        return functools.partial(memory_prompt_block, config=self.deps.config.memory)

    # -- provider ---------------------------------------------------------------------------------

    @property
    def model(self) -> str:
        """The model this session talks to first."""
        options = self.options
        return (options.model if options and options.model else None) or self.deps.config.model.default

    @functools.cached_property
    def chain(self) -> FallbackChain:
        """The session's provider chain: its own target, then ``fallback_providers``."""
        config = self.deps.config.model
        options = self.options
        assert options is not None
        primary = ProviderTarget.resolve(
            options.provider or config.provider or "openai",
            self.model,
            options.base_url or config.base_url,
            options.api_mode or config.api_mode,
        )
        return FallbackChain.from_config(primary, self.deps.config.fallback_providers)

    @property
    def context_length(self) -> int:
        """The model's context window (as an overflow error stated it, once one did)."""
        if self._context_override is not None:
            return self._context_override
        metadata = self.deps.metadata
        if metadata is None:
            return self.deps.config.model.context_length or _DEFAULT_CONTEXT
        return metadata.limits(self.model).context_length

    @property
    def max_output_tokens(self) -> int | None:
        """An explicit output cap from config, if any (Anthropic adapters apply their own)."""
        return self.deps.config.model.max_output_tokens

    # -- per-turn pieces ------------------------------------------------------------------------------

    def guardrails(self) -> ToolCallGuardrailController:
        """A fresh guardrail controller for this session."""
        return ToolCallGuardrailController(self.deps.config.tool_loop_guardrails, lambda name: name in _READ_ONLY_TOOLS)

    def lost_process_notes(self) -> list[str]:
        """Notes about background processes that died with an earlier daemon."""
        return [
            f"[Background process {p.get('id')} (`{p.get('command', '')[:80]}`) was lost when the daemon restarted; "
            "its output is gone. Start it again if it is still needed.]"
            for p in self._lost_processes
        ]

    def compressor_hook(
        self, hub: EventHub
    ) -> Callable[[list[dict[str, Any]], int], Awaitable[list[dict[str, Any]] | None]] | None:
        """The preflight compression the turn calls before each provider call,
        with the history and its estimated size in tokens."""
        config = self.deps.config.compression
        if not config.enabled:
            return None
        compressor = self._get_compressor()

        async def preflight(messages: list[dict[str, Any]], tokens: int) -> list[dict[str, Any]] | None:
            if not compressor.should_compress(tokens):
                return None
            return await self._compress(hub, messages, None)

        return preflight

    async def learn_overflow(self, message: str) -> None:
        """A context-overflow error stated the model's real limits: remember them
        (on disk through the model metadata) and size compression by them."""
        metadata = self.deps.metadata
        if metadata is not None:
            info = await metadata.record_overflow(self.model, message)
        else:
            info = parse_overflow_message(message)
        if info.context_length is not None:
            self._context_override = info.context_length
            if self._compressor is not None:
                self._compressor.update_model(info.context_length)

    async def compress_now(self, hub: EventHub, topic: str | None) -> str:
        """Compress the history on request (``/compress TOPIC``)."""
        result = await self._compress(hub, self.history, topic)
        return "compressed" if result is not None else "nothing to compress"

    async def _compress(self, hub: EventHub, messages: list[dict[str, Any]], topic: str | None) -> list[dict[str, Any]] | None:
        compressor = self._get_compressor()
        hub.publish(StatusUpdate, kind="compressing", text="compressing the conversation")
        try:
            result = await compressor.compress(messages, focus=topic)
        except CompressionError as exc:
            hub.publish(StatusUpdate, kind="info", text=f"nothing compressed: {exc}")
            return None
        if result.warning:
            hub.publish(StatusUpdate, kind="warning", text=result.warning)
        if result.summarised_count == 0:
            return None
        await self.deps.store.compact(self.session_id, result.messages)
        self.history = list(result.messages)
        self._persisted = len(self.history)
        self.compression_state = {"summary": result.summary, "count": compressor.statistics().compressions}
        hub.publish(StatusUpdate, kind="compressing",
                    text=f"compressed {result.tokens_before} → {result.tokens_after} tokens")
        return list(result.messages)

    def _get_compressor(self) -> ContextCompressor:
        if self._compressor is None:
            self._compressor = ContextCompressor(
                self.deps.config.compression, context_length=self.context_length,
                summarize=self._summarize, estimate_tokens=rough_tokens,
            )
        return self._compressor

    async def _summarize(self, messages: list[dict[str, Any]], instructions: str) -> str:
        """Summaries come from the auxiliary model when configured, else the main one."""
        aux = self.deps.config.auxiliary
        chain = self.chain
        if aux.model:
            current = chain.current
            chain = FallbackChain(ProviderTarget.resolve(aux.provider or current.provider, aux.model,
                                                         aux.base_url or current.base_url))
        transcript = "\n".join(f"{m.get('role')}: {_text_of(m)}" for m in messages)
        request = ChatRequest(
            messages=[{"role": "user", "content": f"{instructions}\n\n---\n{transcript}"}],
            tools=[], model=chain.current.model,
        )
        finished = await stream_with_recovery(request, chain=chain, connector=self.deps.connector, pools=self.deps.pools,
                                              retry=self.deps.config.retry)
        return finished.message.get("content") or ""

    # -- persistence ----------------------------------------------------------------------------------

    def note_persisted(self, count: int) -> None:
        """The turn committed ``count`` more messages."""
        self._persisted += count

    async def flush_history(self) -> None:
        """Commit whatever of the history is not in the store yet."""
        new = self.history[self._persisted:]
        if new:
            await self.deps.store.append(self.session_id, new)
            self._persisted = len(self.history)

    async def save_state(self, *, event_seq: int, turns: int, usage: Usage) -> None:
        """Save what a restarted daemon needs to resume this session."""
        assert self.options is not None
        state = {
            "options": self.options.to_state(),
            "tools": self.tools,
            "tool_names": sorted(self.tool_names),
            "shell": {"cwd": self.shell.cwd, "env": self.shell.env},
            "todo": self.todo.to_dicts(),
            "event_seq": event_seq,
            "turns": turns,
            "usage": attrs.asdict(usage),
            "compression": self.compression_state,
            "approvals": self.deps.approvals.for_session(self.session_id).snapshot() if self.deps.approvals else [],
            "processes": [
                {"id": r.process_id, "command": r.spec.command, "running": not r.status.finished}
                for r in self.processes.records()
            ],
        }
        await self.deps.store.save_state(self.session_id, state)


def _text_of(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return json.dumps(content, ensure_ascii=False, default=str)


def _platform(source: str) -> str:
    return source if source in ("cli", "api", "cron", "subagent") else "cli"

