"""delegate_task as supervised child sessions.

Each task becomes a session actor under the calling tool call
(``…/turn/tool:<call-id>/subagent:<n>``) with a fresh history, the focused
subagent prompt, the parent's provider, its own iteration budget, and the
blocked tools removed. All children of a batch run at once; the parent's turn
waits for all of them. Their events are relayed to the parent's subscribers
under the child's path. A child runs under its parent's jail. Cancelling the parent's turn cancels every child (they
are children of the tool call); an operator's kill of one child reports that
task as ``interrupted`` while its siblings go on. A child quiet for too long is
reported stale to the parent (and stopped, with ``delegation.kill_stale``).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import attrs
import trio

from actors import ActorHandle
from actors.session import (
    CallContext,
    DelegateTask,
    ParentSession,
    SessionActor,
    SessionOptions,
    SessionSpec,
    build_subagent_prompt,
    new_session_id,
)
from actors.subagent.tool import BLOCKED_IN_CHILDREN, InvalidDelegation, Task, parse_delegation
from config.delegation import DelegationConfig
from messages.events import ToolFinished, ToolStarted, TurnFinished, UsageUpdated
from messages.session import EventFeed, Subscribe, UserMessage
from store.protocol import SessionStore
from tools.errors import ToolError
from tools.results import ToolResult

__all__ = ["ChildReport", "delegate_capability"]

log = logging.getLogger("hermes_actors.subagent")

#: Largest summary returned inline; the rest is kept on disk and referenced.
MAX_SUMMARY_CHARS = 20_000


@attrs.define
class ChildReport:
    """One task's outcome, as the parent's tool result lists it."""

    task_index: int
    status: str = "error"
    summary: str = ""
    api_calls: int = 0
    duration_seconds: float = 0.0
    model: str = ""
    exit_reason: str = ""
    tokens: dict[str, int] = attrs.Factory(lambda: {"input": 0, "output": 0})
    tool_trace: list[dict[str, Any]] = attrs.Factory(list)


def delegate_capability(parent: ParentSession, config: DelegationConfig) -> DelegateTask:
    """The delegate_task capability of the session ``parent`` describes."""

    async def delegate(ctx: CallContext, args: dict[str, Any]) -> ToolResult:
        depth = parent.state.options.depth + 1
        if depth > config.max_spawn_depth:
            raise ToolError(f"Delegation depth limit reached (depth={depth}, max_spawn_depth={config.max_spawn_depth})")
        try:
            request = parse_delegation(args, config)
        except InvalidDelegation as exc:
            raise ToolError(str(exc)) from exc
        started = trio.current_time()
        reports = [ChildReport(task_index=i) for i in range(len(request.tasks))]
        async with trio.open_nursery() as nursery:
            for index, task in enumerate(request.tasks):
                nursery.start_soon(_run_child, parent, config, ctx, task, depth, reports[index])
        return ToolResult(
            {"results": [attrs.asdict(r) for r in reports], "total_duration_seconds": round(trio.current_time() - started, 2)}
        )

    return delegate


def _child_options(parent: ParentSession, config: DelegationConfig, task: Task, depth: int, workspace: str) -> SessionOptions:
    options = parent.state.options
    tool_names = parent.state.tools.names
    registry = parent.deps.registry
    may_orchestrate = task.role == "orchestrator" and config.orchestrator_enabled and depth < config.max_spawn_depth
    blocked = set(BLOCKED_IN_CHILDREN)
    if may_orchestrate:
        blocked.discard("delegate_task")
    # Narrowing only: anything the parent does not have stays out.
    blocked |= {name for name in registry.names() if name not in tool_names}
    target = parent.model.chain.current
    return SessionOptions(
        cwd=workspace,
        model=target.model,
        provider=target.provider,
        base_url=target.base_url,
        api_mode=target.api_mode,
        source="subagent",
        interactive=False,
        toolsets=options.toolsets,
        blocked_tools=frozenset(blocked),
        max_iterations=config.max_iterations,
        parent_session_id=parent.session_id,
        depth=depth,
        system_prompt=build_subagent_prompt(
            task.goal, task.context, workspace, orchestrator=may_orchestrate, child_depth=depth,
            max_spawn_depth=config.max_spawn_depth,
        ),
        load_context_files=False,
        use_memory=False,
        auto_approve=config.subagent_auto_approve,
        sandbox=options.sandbox,
    )


async def _run_child(
    parent: ParentSession, config: DelegationConfig, ctx: CallContext, task: Task, depth: int, report: ChildReport
) -> None:
    started = trio.current_time()
    index = report.task_index
    options = _child_options(parent, config, task, depth, ctx.shell.cwd)
    child_id = new_session_id()
    # The child runs in its parent's jail: same mode, workspace and temp directory, never wider.
    spec = SessionSpec(
        parent.deps, child_id, options, parent_meter=ctx.token_meter, runtime=parent.runtime,
        delegate=lambda child: delegate_capability(child, config),
    )
    report.model = parent.model.current
    # Which of the child's tool calls succeeded, from its ToolFinished events.
    succeeded: dict[str, bool] = {}
    handle: ActorHandle[Any] | None = None
    try:
        handle = await ctx.job.spawn(SessionActor(spec), f"subagent:{index}")
        subscription = await handle.ask(Subscribe(f"parent {ctx.job.path}"))
        await handle.tell(UserMessage(task.goal, source="subagent"))
        await _follow(handle, child_id, subscription, ctx, config, report, succeeded)
        handle.stop("subagent finished", requested_by=ctx.job.path)
        await handle.wait_stopped()
    except BaseException:
        why = "parent turn was cancelled"
        if handle is not None and not report.exit_reason:  # an exit reason: the child's end was seen, and shown
            _relay_end(ctx, handle, child_id, why)
        report.status, report.exit_reason = "interrupted", why
        raise
    finally:
        report.duration_seconds = round(trio.current_time() - started, 2)
    report.tool_trace = await _tool_trace(parent.deps.store, child_id, succeeded)
    if report.summary:
        report.summary = await _cap_summary(report.summary, parent.deps.home, child_id)


async def _follow(
    handle: ActorHandle[Any], child_id: str, subscription: EventFeed, ctx: CallContext, config: DelegationConfig,
    report: ChildReport, succeeded: dict[str, bool],
) -> None:
    """Relay the child's events to the parent until its turn ends; watch for staleness and the timeout."""
    in_tool = 0
    with trio.move_on_after(config.child_timeout_seconds or float("inf")) as timeout:
        while True:
            limit = config.stale_tool_seconds if in_tool else config.stale_idle_seconds
            with trio.move_on_after(limit) as quiet:
                event = await _next(subscription)
            if quiet.cancelled_caught:
                _stale(handle, ctx, limit, config)
                continue
            if event is None:
                report.status = "interrupted"
                report.exit_reason = "stopped by operator" if handle.statistics().cancel_reason else "the subagent stopped"
                _relay_end(ctx, handle, child_id, report.exit_reason)
                return
            try:
                ctx.relay(event)
            except Exception:  # a failing relay never harms the child
                log.exception("relaying an event of %s failed", handle.path)
            if event.session_id != child_id:
                continue  # a grandchild's event, relayed through this child
            if isinstance(event, ToolStarted):
                in_tool += 1
            elif isinstance(event, ToolFinished):
                in_tool = max(in_tool - 1, 0)
                succeeded[event.call_id] = event.ok
            elif isinstance(event, UsageUpdated):
                report.api_calls = event.api_calls
                report.tokens = {"input": event.prompt_tokens, "output": event.completion_tokens}
            elif isinstance(event, TurnFinished):
                report.summary = event.final_text
                report.exit_reason = event.reason
                report.status = {"completed": "completed", "interrupted": "interrupted", "budget": "completed"}.get(event.reason, "failed")
                return
    if timeout.cancelled_caught:
        report.status, report.exit_reason = "timeout", f"no answer within {config.child_timeout_seconds:g}s"


def _relay_end(ctx: CallContext, handle: ActorHandle[Any], child_id: str, why: str) -> None:
    """Show the parent's clients that the child ended before its turn did (killed, or the parent's turn
    interrupted): its own TurnFinished never reached them, and they would wait for it."""
    ended = TurnFinished(session_id=child_id, path=handle.path, turn_id=1, final_text="", reason="interrupted", error=why)
    try:
        ctx.relay(ended)
    except Exception:  # a failing relay never harms the parent
        log.exception("relaying the end of %s failed", handle.path)


async def _next(subscription: EventFeed) -> Any:
    async for event in subscription:
        return event
    return None


def _stale(handle: ActorHandle[Any], ctx: CallContext, limit: float, config: DelegationConfig) -> None:
    ctx.emit(f"subagent {handle.path} made no progress for {limit:g}s (stale)")
    if config.kill_stale:
        handle.stop(f"stale for {limit:g}s", requested_by="heartbeat")


async def _tool_trace(store: SessionStore, child_id: str, succeeded: dict[str, bool]) -> list[dict[str, Any]]:
    """The child's tool calls as its stored history has them; a call succeeded when its
    ToolFinished said so (a call answered without running did not)."""
    history = (await store.load(child_id)).messages
    calls: dict[str, dict[str, Any]] = {}
    trace: list[dict[str, Any]] = []
    for message in history:
        for call in message.get("tool_calls") or ():
            entry = {"tool": call["function"]["name"], "args_bytes": len(call["function"].get("arguments") or ""),
                     "result_bytes": 0, "status": "pending"}
            calls[call["id"]] = entry
            trace.append(entry)
        if message.get("role") == "tool" and message.get("tool_call_id") in calls:
            content = message.get("content") or ""
            entry = calls[message["tool_call_id"]]
            entry["result_bytes"] = len(content) if isinstance(content, str) else len(json.dumps(content))
            entry["status"] = "ok" if succeeded.get(message["tool_call_id"]) else "error"
    return trace


async def _cap_summary(summary: str, home: Path, child_id: str) -> str:
    if len(summary) <= MAX_SUMMARY_CHARS:
        return summary
    path = home / "subagents" / f"{child_id}.md"

    def write() -> None:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        path.write_text(summary, encoding="utf-8")

    await trio.to_thread.run_sync(write)
    return f"{summary[:MAX_SUMMARY_CHARS]}\n\n[Summary truncated: {len(summary) - MAX_SUMMARY_CHARS} more characters in {path}]"
