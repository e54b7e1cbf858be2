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

from actors.session.history import repair_on_load
from actors.session.options import SessionDeps, SessionOptions, SessionSpec
from actors.session.prompt.builder import PromptSpec, build_system_prompt, session_line
from actors.session.prompt.texts import PLATFORM_HINTS
from actors.session.tool_list import FrozenTools
from config.sandbox import SANDBOX_MODES
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

Message = dict[str, Any]


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
    history: list[Message]
    tools: FrozenTools
    shell: ShellState
    todo: TodoList = attrs.Factory(TodoList)
    event_seq: int = 0
    turns: int = 0
    usage: Usage = Usage()
    api_calls: int = 0
    cost_usd: float | None = None
    compression: dict[str, Any] = attrs.Factory(dict)
    lost_processes: list[dict[str, Any]] = attrs.Factory(list)
    persisted: int = 0
    saved: dict[str, Any] | None = attrs.field(default=None, eq=False, repr=False)
    unrecorded: SessionMeta | None = attrs.field(default=None, eq=False, repr=False)

    def lost_process_notes(self) -> list[str]:
        """Notes about background processes that died with an earlier daemon."""
        return [
            f"[Background process {p.get('id')} (`{p.get('command', '')[:80]}`) was lost when the daemon restarted; "
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
            # One request's session: the prompt a moment ago's would build (see actors.session.prompt.cache).
            prompt = await deps.prompts.get(
                (prompt_spec, memory is not None), lambda: build_system_prompt(prompt_spec, memory_block=memory)
            )
        else:
            prompt = await build_system_prompt(prompt_spec, memory_block=memory)
    else:
        # A prompt given from outside (a subagent's) ends with the same line, as Hermes's children's do.
        prompt = f"{prompt}\n\n{session_line(started, model, provider)}"
    state = SessionState(options, [{"role": "system", "content": prompt}, *spec.seed], tools, ShellState(cwd=options.cwd))
    meta = SessionMeta(id=spec.session_id, parent_session_id=options.parent_session_id, source=options.source,
                       model=model, title=options.title, cwd=options.cwd)
    if spec.ephemeral:
        state.unrecorded = meta
        return state
    saved = _snapshot(deps, spec.session_id, state, event_seq=0, processes=())
    # The row, the first messages and the state in one commit: a restart finds all of them or none.
    await deps.store.create_session(meta, messages=state.history, state=saved)
    state.saved = saved
    return state


async def _restore(spec: SessionSpec) -> SessionState:
    deps = spec.deps
    session_id = spec.session_id
    loaded = await deps.store.load(session_id)
    saved = loaded.state or {}
    options = SessionOptions.from_state(saved.get("options") or {"cwd": loaded.info.cwd or str(Path.home())})
    options = _settle_mode(deps, session_id, options, restored=True)
    definitions = list(saved.get("tools") or [])
    if definitions:
        tools = FrozenTools(frozenset(saved.get("tool_names") or []), definitions, _emojis(deps, definitions))
    else:
        tools = freeze_tools(deps, options)
    repaired = repair_on_load(loaded.messages)
    if repaired != loaded.messages:
        log.warning("session %s: history repaired on load (%d -> %d messages)", session_id, len(loaded.messages), len(repaired))
        stored = len(loaded.messages)
        if repaired[:stored] == loaded.messages:
            # A crash mid-turn leaves the history open at its end: closing it only adds messages. Stored as
            # a new epoch, the whole conversation would be in the store twice (and in `sessions show`).
            await deps.store.append(session_id, repaired[stored:])
        else:
            await deps.store.compact(session_id, repaired)
    shell = saved.get("shell") or {}
    if deps.approvals is not None:
        deps.approvals.restore(session_id, saved.get("approvals") or [])
    return SessionState(
        options=options,
        history=repaired,
        tools=tools,
        shell=_restored_shell(shell, options.cwd),
        todo=TodoList.from_dicts(saved.get("todo") or []),
        event_seq=int(saved.get("event_seq") or 0),
        turns=int(saved.get("turns") or 0),
        usage=Usage(**(saved.get("usage") or {})),
        api_calls=int(saved.get("api_calls") or 0),
        cost_usd=_saved_cost(saved.get("cost_usd")),
        compression=dict(saved.get("compression") or {}),
        lost_processes=[p for p in saved.get("processes") or [] if p.get("running")],
    )


def _saved_cost(value: Any) -> float | None:
    """A stored cost, or None when absent or not a usable number (an older or damaged state)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < float("inf"):
        return None
    return float(value)


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
    names = ToolsetCatalog(registry).select_tools(enabled, config.tools.disabled_toolsets)
    names = frozenset(n for n in names if n in registry and n not in options.blocked_tools)
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
    await deps.store.create_session(meta, messages=state.history, state=saved)
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
            await deps.store.save_state(session_id, saved)
        await deps.store.end_session(session_id, reason)
        return
    usage = state.usage
    await deps.store.record_session(
        meta, messages=state.history, state=saved, reason=reason,
        tokens_in=usage.prompt_tokens, tokens_out=usage.completion_tokens, cost=state.cost_usd or 0.0,
    )
    state.unrecorded = None


async def flush_history(deps: SessionDeps, session_id: str, state: SessionState) -> None:
    """Commit whatever of the history is not in the store yet."""
    new = state.history[state.persisted:]
    if new:
        await deps.store.append(session_id, new)
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
    await deps.store.save_state(session_id, saved)
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
        state=saved if changed else None,
    )
    if changed:
        state.saved = saved


def _snapshot(
    deps: SessionDeps, session_id: str, state: SessionState, *, event_seq: int, processes: Sequence[ProcessRecord]
) -> dict[str, Any]:
    """The state as saved (see :func:`save_state`)."""
    tools = state.tools
    # Fresh containers throughout (the two mutable dicts copied): the last save is compared with the
    # next one, and must not change under it.
    return {
        "options": state.options.to_state(),
        "tools": tools.encoded,
        "tool_names": sorted(tools.names),
        "shell": _saved_shell(state.shell),
        "todo": state.todo.to_dicts(),
        "event_seq": event_seq,
        "turns": state.turns,
        "usage": attrs.asdict(state.usage),
        "api_calls": state.api_calls,
        "cost_usd": state.cost_usd,
        "compression": dict(state.compression),
        "approvals": deps.approvals.for_session(session_id).snapshot() if deps.approvals else [],
        "processes": [
            {"id": r.process_id, "command": r.spec.command, "running": not r.status.finished}
            for r in processes
        ],
    }


def _saved_shell(shell: ShellState) -> dict[str, Any]:
    """The shell as saved: the values of the variables loaded skills let in are left out (they are secrets
    more often than not, and the store is no place for them); :func:`_restored_shell` reads them again."""
    env = {name: value for name, value in shell.env.items() if name not in shell.passthrough}
    return {"cwd": shell.cwd, "env": env, "passthrough": sorted(shell.passthrough)}


def _restored_shell(saved: dict[str, Any], cwd: str) -> ShellState:
    """The shell saved by :func:`_saved_shell`, its skills' variables taken from the daemon's environment again."""
    env = dict(saved.get("env") or {})
    passthrough = set(saved.get("passthrough") or ())
    if env:
        # An empty environment is built, passthrough included, at the shell's first command.
        with_passthrough(env, os.environ, passthrough)
    return ShellState(cwd=saved.get("cwd") or cwd, env=env, passthrough=passthrough)


def _platform(source: str) -> str:
    return source if source in PLATFORM_HINTS else "cli"
