"""A session's durable state, and the one place it is loaded from and saved to the store.

A new session is created here (system prompt, frozen tool list, sandbox mode
settled); a woken or restarted one is restored from what was saved after its
last turn. The system prompt and the tool list are frozen for the session's
life: a ``check_fn`` flipping mid-session must not change what the model was
given (that would break the provider's prompt cache).
"""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

from conversation.history import repair_on_load
from actors.session.options import SessionDeps, SessionOptions, SessionSpec
from conversation.prompt.builder import PromptSpec, build_system_prompt, session_line
from conversation.prompt.texts import PLATFORM_HINTS
from actors.session.saved import SavedProcess, SavedShell, SavedState, SavedStateError, dump_saved, load_saved
from conversation.tool_list import FrozenTools
from config.sandbox import SANDBOX_MODES
from messages.chat import ChatMessage, ChatMessageError, SystemMessage, message_from_dict, messages_to_dicts
from providers.types import Usage
from store.records import SessionMeta
from tools.background import ProcessRecord
from tools.context import ShellState
from tools.jail.environment import with_passthrough
from tools.jail.policy import SandboxMode, SandboxModeRefused, resolve_mode
from tools.memory import MemoryStore
from tools.todo import TodoList
from tools.toolsets import OPT_IN_TOOLSETS, ToolsetCatalog

__all__ = [
    "FrozenTools", "SessionState", "ensure_recorded", "flush_history", "freeze_tools", "new_session_id", "open_state",
    "record_ended", "save_state", "save_turn_state",
]

log = logging.getLogger("hermes_actors.session.state")


def new_session_id() -> str:
    """A fresh session id: short, unguessable, safe in paths."""
    return secrets.token_hex(6)


@attrs.define
class SessionState:
    """What a session keeps across hibernation and daemon restarts.

    Attributes:
        options: its settings (the sandbox mode settled when it was created).
        history: the conversation as committed to the store.
        tools: the frozen tool list.
        shell / todo: the terminal's working directory and environment, the todo list.
        event_seq: the event number the session had reached when it was saved (its hub goes on from it).
        turns / usage / api_calls: turns run, tokens used and provider calls made over the session's life.
        cost_usd: the estimated cost over the session's life (None: no call had a known price).
        compression: the last compression's summary and count.
        lost_processes: background processes that were running when it was saved (restored
            sessions only: they died with the daemon).
        persisted: how many of ``history``'s messages are in the store.
        saved: what was last written to the store (not itself saved): a save that would write
            the same again is skipped (a session stopping right after its turn's save).
        unrecorded: an ephemeral session's row while the store has none (see :func:`ensure_recorded`);
            None once it is stored, and for every other session.
    """

    options: SessionOptions
    history: list[ChatMessage]
    tools: FrozenTools
    shell: ShellState
    todo: TodoList = attrs.Factory(TodoList)
    event_seq: int = 0
    turns: int = 0
    usage: Usage = Usage()
    api_calls: int = 0
    cost_usd: float | None = None
    compression: dict[str, Any] = attrs.Factory(dict)
    lost_processes: list[SavedProcess] = attrs.Factory(list)
    persisted: int = 0
    saved: SavedState | None = attrs.field(default=None, eq=False, repr=False)
    unrecorded: SessionMeta | None = attrs.field(default=None, eq=False, repr=False)

    def lost_process_notes(self) -> list[str]:
        """Notes about background processes that died with an earlier daemon."""
        return [
            f"[Background process {p.id} (`{p.command[:80]}`) was lost when the daemon restarted; "
            "its output is gone. Start it again if it is still needed.]"
            for p in self.lost_processes
        ]


async def open_state(spec: SessionSpec) -> SessionState:
    """The state of the session ``spec`` describes: created in the store (options given) or restored.

    Raises:
        SandboxModeRefused: a new session asked for a mode the daemon does not allow.
        SessionNotFoundError: restoring a session the store does not have.
    """
    state = await (_restore(spec) if spec.options is None else _create(spec, spec.options))
    state.persisted = len(state.history)
    return state


async def _create(spec: SessionSpec, options: SessionOptions) -> SessionState:
    deps = spec.deps
    options = _settle_mode(deps, spec.session_id, options, restored=False)
    tools = freeze_tools(deps, options)
    prompt = options.system_prompt
    model = options.model_name(deps.config)
    provider = options.provider_name(deps.config)
    started = deps.today()
    if prompt is None:
        prompt_spec = PromptSpec(
            home=deps.home, cwd=Path(options.cwd), model=model, provider=provider, started=started,
            platform=_platform(options.source), tool_names=tools.names, load_context_files=options.load_context_files,
            skills_external=deps.config.skills.external_dirs,
        )
        memory = _memory_block(deps, options, tools.names)
        if spec.ephemeral:
            # One request's session: the prompt a moment ago's would build (see conversation.prompt.cache).
            prompt = await deps.prompts.get(
                (prompt_spec, memory is not None), lambda: build_system_prompt(prompt_spec, memory_block=memory)
            )
        else:
            prompt = await build_system_prompt(prompt_spec, memory_block=memory)
    else:
        # A prompt given from outside (a subagent's) ends with the same line, as Hermes's children's do.
        prompt = f"{prompt}\n\n{session_line(started, model, provider)}"
    state = SessionState(options, [SystemMessage(prompt), *spec.seed], tools, ShellState(cwd=options.cwd))
    meta = SessionMeta(id=spec.session_id, parent_session_id=options.parent_session_id, source=options.source,
                       model=model, title=options.title, cwd=options.cwd)
    if spec.ephemeral:
        state.unrecorded = meta
        return state
    saved = _snapshot(deps, spec.session_id, state, event_seq=0, processes=())
    # The row, the first messages and the state in one commit: a restart finds all of them or none.
    await deps.store.create_session(meta, messages=messages_to_dicts(state.history), state=dump_saved(saved))
    state.saved = saved
    return state


async def _restore(spec: SessionSpec) -> SessionState:
    deps = spec.deps
    session_id = spec.session_id
    loaded = await deps.store.load(session_id)
    saved = _read_saved(session_id, loaded.state)
    options = saved.options or SessionOptions(cwd=loaded.info.cwd or str(Path.home()))
    options = _settle_mode(deps, session_id, options, restored=True)
    definitions = saved.tools if isinstance(saved.tools, list) else []
    if definitions:
        tools = FrozenTools(frozenset(saved.tool_names), definitions, _emojis(deps, definitions))
    else:
        tools = freeze_tools(deps, options)
    stored = len(loaded.messages)
    typed = _typed_history(session_id, loaded.messages)
    repaired = repair_on_load(typed)
    if len(typed) != stored or repaired != typed:
        log.warning("session %s: history repaired on load (%d -> %d messages)", session_id, stored, len(repaired))
        if len(typed) == stored and repaired[:stored] == typed:
            # A crash mid-turn leaves the history open at its end: closing it only adds messages. Stored as
            # a new epoch, the whole conversation would be in the store twice (and in `sessions show`).
            await deps.store.append(session_id, messages_to_dicts(repaired[stored:]))
        else:
            await deps.store.compact(session_id, messages_to_dicts(repaired))
    if deps.approvals is not None:
        deps.approvals.restore(session_id, saved.approvals)
    return SessionState(
        options=options,
        history=repaired,
        tools=tools,
        shell=_restored_shell(saved.shell, options.cwd),
        todo=TodoList.from_dicts(saved.todo),
        event_seq=saved.event_seq,
        turns=saved.turns,
        usage=saved.usage,
        api_calls=saved.api_calls,
        cost_usd=saved.cost_usd,
        compression=dict(saved.compression),
        lost_processes=[p for p in saved.processes if p.running],
    )


def _typed_history(session_id: str, stored: Sequence[dict[str, Any]]) -> list[ChatMessage]:
    """The stored messages as typed values; one that is not a chat message (a damaged row) is logged and
    left out, and the repair that follows stores the history without it."""
    typed: list[ChatMessage] = []
    for index, message in enumerate(stored):
        try:
            typed.append(message_from_dict(message))
        except ChatMessageError as exc:
            log.warning("session %s: stored message %d dropped: %s", session_id, index, exc)
    return typed


def _read_saved(session_id: str, stored: dict[str, Any] | None) -> SavedState:
    """The saved state of the store's object; a damaged one is logged and read as none (the session
    resumes its history with fresh settings rather than not at all)."""
    if stored is None:
        return SavedState()
    try:
        return load_saved(stored)
    except SavedStateError as exc:
        log.warning("session %s: %s; resuming with fresh settings", session_id, exc)
        return SavedState()


def _settle_mode(deps: SessionDeps, session_id: str, options: SessionOptions, *, restored: bool) -> SessionOptions:
    """The options with the sandbox mode resolved, so it is stored and kept across restarts.

    A stored mode the daemon no longer allows (``sandbox.max_mode`` narrowed since) is narrowed to
    what it allows now, never kept wider.

    Raises:
        SandboxModeRefused: a new session asked for a mode the daemon does not allow.
    """
    config = deps.config.sandbox
    try:
        mode = resolve_mode(options.sandbox, config)
    except SandboxModeRefused as exc:
        if not restored:
            raise
        mode = SandboxMode(config.max_mode if options.sandbox in SANDBOX_MODES else config.mode)
        log.warning("session %s: %s; it runs %s now", session_id, exc, mode.value)
    return attrs.evolve(options, sandbox=mode.value)


def freeze_tools(deps: SessionDeps, options: SessionOptions) -> FrozenTools:
    """The tools the registry offers a session with ``options`` now (creation, ``/reset-tools``)."""
    registry = deps.registry
    config = deps.config
    enabled = options.toolsets if options.toolsets is not None else config.tools.enabled_toolsets
    if options.toolsets is not None and options.interactive:
        # A bot's chat opts in where the CLI does: an opt-in toolset named in tools.enabled_toolsets.
        enabled = (*options.toolsets, *(n for n in config.tools.enabled_toolsets or () if n in OPT_IN_TOOLSETS))
    disabled = config.tools.disabled_toolsets
    blocked = options.blocked_tools

    def select() -> frozenset[str]:
        selected = ToolsetCatalog(registry).select_tools(enabled, disabled)
        return frozenset(n for n in selected if n in registry and n not in blocked)

    key = (None if enabled is None else tuple(enabled), disabled, blocked)
    names = deps.tool_lists.names_for(key, registry.generation, select)
    definitions = registry.get_definitions(names)
    return deps.tool_lists.freeze(definitions, lambda: _emojis(deps, definitions))


def _emojis(deps: SessionDeps, definitions: Sequence[dict[str, Any]]) -> dict[str, str]:
    emojis: dict[str, str] = {}
    for definition in definitions:
        name = definition["function"]["name"]
        tool = deps.registry.get(name)
        if tool is not None:
            emojis[name] = tool.emoji
    return emojis


def _memory_block(deps: SessionDeps, options: SessionOptions, tool_names: frozenset[str]) -> Callable[[Path], str] | None:
    """MEMORY.md and USER.md for the prompt (read once, at creation, in the prompt's worker thread)."""
    if not options.use_memory or "memory" not in tool_names:
        return None
    config = deps.config.memory
    return lambda home: MemoryStore(home, config).prompt_block_blocking()


async def ensure_recorded(
    deps: SessionDeps, session_id: str, state: SessionState, *, event_seq: int = 0, processes: Sequence[ProcessRecord] = ()
) -> None:
    """Store an ephemeral session's row, history and state now (nothing when it is stored already).

    An ephemeral session writes nothing while it only talks; what needs its row (a tool's call, which
    may record a transcript or start a subagent under it, a compression) calls this first, and from
    then on it is stored as any session is."""
    meta = state.unrecorded
    if meta is None:
        return
    saved = _snapshot(deps, session_id, state, event_seq=event_seq, processes=processes)
    await deps.store.create_session(meta, messages=messages_to_dicts(state.history), state=dump_saved(saved))
    state.unrecorded = None
    state.saved = saved
    state.persisted = len(state.history)


async def record_ended(
    deps: SessionDeps, session_id: str, state: SessionState, *, event_seq: int, processes: Sequence[ProcessRecord],
    reason: str,
) -> None:
    """Store a stopping ephemeral session as ended, with what it saved and used: in one commit when
    it was never stored, else its last state, then its end."""
    saved = _snapshot(deps, session_id, state, event_seq=event_seq, processes=processes)
    meta = state.unrecorded
    if meta is None:
        await flush_history(deps, session_id, state)
        if saved != state.saved:
            await deps.store.save_state(session_id, dump_saved(saved))
        await deps.store.end_session(session_id, reason)
        return
    usage = state.usage
    await deps.store.record_session(
        meta, messages=messages_to_dicts(state.history), state=dump_saved(saved), reason=reason,
        tokens_in=usage.prompt_tokens, tokens_out=usage.completion_tokens, cost=state.cost_usd or 0.0,
    )
    state.unrecorded = None


async def flush_history(deps: SessionDeps, session_id: str, state: SessionState) -> None:
    """Commit whatever of the history is not in the store yet."""
    new = state.history[state.persisted:]
    if new:
        await deps.store.append(session_id, messages_to_dicts(new))
        state.persisted = len(state.history)


async def save_state(
    deps: SessionDeps, session_id: str, state: SessionState, *, event_seq: int, processes: Sequence[ProcessRecord]
) -> None:
    """Save what a restarted daemon needs to resume this session (``event_seq``: the hub's last number,
    ``processes``: its background processes, so a restarted daemon can say which were lost).

    Nothing is written when the state is what the last save wrote."""
    saved = _snapshot(deps, session_id, state, event_seq=event_seq, processes=processes)
    if saved == state.saved:
        return
    await deps.store.save_state(session_id, dump_saved(saved))
    state.saved = saved


async def save_turn_state(
    deps: SessionDeps, session_id: str, state: SessionState, *, event_seq: int, processes: Sequence[ProcessRecord],
    usage: Usage, cost: float,
) -> None:
    """:func:`save_state` at a turn's end, with the turn's ``usage`` and ``cost`` added to the session's
    counters in the same commit (the counters alone when the state is what the last save wrote)."""
    saved = _snapshot(deps, session_id, state, event_seq=event_seq, processes=processes)
    changed = saved != state.saved
    await deps.store.update_counters(
        session_id, tokens_in=usage.prompt_tokens, tokens_out=usage.completion_tokens, cost=cost,
        state=dump_saved(saved) if changed else None,
    )
    if changed:
        state.saved = saved


def _snapshot(
    deps: SessionDeps, session_id: str, state: SessionState, *, event_seq: int, processes: Sequence[ProcessRecord]
) -> SavedState:
    """The state as saved (see :func:`save_state`)."""
    tools = state.tools
    # Fresh containers throughout (the two mutable dicts copied): the last save is compared with the
    # next one, and must not change under it.
    return SavedState(
        options=state.options,
        tools=tools.encoded,
        tool_names=sorted(tools.names),
        shell=_saved_shell(state.shell),
        todo=state.todo.to_dicts(),
        event_seq=event_seq,
        turns=state.turns,
        usage=state.usage,
        api_calls=state.api_calls,
        cost_usd=state.cost_usd,
        compression=dict(state.compression),
        approvals=deps.approvals.for_session(session_id).snapshot() if deps.approvals else [],
        processes=[SavedProcess(r.process_id, r.spec.command, not r.status.finished) for r in processes],
    )


def _saved_shell(shell: ShellState) -> SavedShell:
    """The shell as saved: the values of the variables loaded skills let in are left out (they are secrets
    more often than not, and the store is no place for them); :func:`_restored_shell` reads them again."""
    env = {name: value for name, value in shell.env.items() if name not in shell.passthrough}
    return SavedShell(shell.cwd, env, sorted(shell.passthrough))


def _restored_shell(saved: SavedShell, cwd: str) -> ShellState:
    """The shell saved by :func:`_saved_shell`, its skills' variables taken from the daemon's environment again."""
    env = dict(saved.env)
    passthrough = set(saved.passthrough)
    if env:
        # An empty environment is built, passthrough included, at the shell's first command.
        with_passthrough(env, os.environ, passthrough)
    return ShellState(cwd=saved.cwd or cwd, env=env, passthrough=passthrough)


def _platform(source: str) -> str:
    return source if source in PLATFORM_HINTS else "cli"
