"""delegate_task as supervised child sessions.

Each task becomes a session actor under the calling tool worker
(``…/turn/tool:<call-id>/subagent:<n>``) with a fresh history, the focused
subagent prompt, the parent's provider, its own iteration budget, and the
blocked tools removed. All children of a batch run at once; the parent's turn
waits for all of them. Their events are relayed to the parent's subscribers
under the child's path. A child runs under its parent's jail. Cancelling the parent's turn cancels every child (they
are children of the worker); an operator's kill of one child reports that
task as ``interrupted`` while its siblings go on.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import attrs
import trio

from actors.session.actor import SessionActor
from actors.session.context import CallContext
from actors.session.hub import Subscription
from actors.session.options import SessionOptions
from actors.session.prompt.builder import build_subagent_prompt
from actors.session.setup import SessionSetup, new_session_id
from actors.subagent.tool import BLOCKED_IN_CHILDREN, InvalidDelegation, Task, parse_delegation
from config.delegation import DelegationConfig
from messages.events import ToolFinished, ToolStarted, TurnFinished, UsageUpdated
from messages.session import Subscribe, UserMessage
from tools.errors import ToolError
from tools.results import ToolResult
from tools.toolsets import ToolsetCatalog

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


def delegate_capability(
    setup: SessionSetup, config: DelegationConfig
) -> Callable[[CallContext, dict[str, Any]], Awaitable[ToolResult]]:
    """The delegate_task capability of the session built from ``setup``."""

    async def delegate(ctx: CallContext, args: dict[str, Any]) -> ToolResult:
        options = setup.options
        assert options is not None
        depth = options.depth + 1
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
                nursery.start_soon(_run_child, setup, config, ctx, task, index, depth, reports[index])
        return ToolResult(
            {"results": [attrs.asdict(r) for r in reports], "total_duration_seconds": round(trio.current_time() - started, 2)}
        )

    return delegate


def _child_options(setup: SessionSetup, config: DelegationConfig, task: Task, depth: int, workspace: str) -> SessionOptions:
    parent = setup.options
    assert parent is not None
    may_orchestrate = task.role == "orchestrator" and config.orchestrator_enabled and depth < config.max_spawn_depth
    blocked = set(BLOCKED_IN_CHILDREN)
    if may_orchestrate:
        blocked.discard("delegate_task")
    # Narrowing only: anything the parent does not have stays out.
    blocked |= {name for name in setup.deps.registry.names() if name not in setup.tool_names}
    if task.toolsets is not None:
        wanted = ToolsetCatalog(setup.deps.registry).select_tools(task.toolsets)
        blocked |= {name for name in setup.tool_names if name not in wanted}
    target = setup.chain.current
    return SessionOptions(
        cwd=workspace,
        model=target.model,
        provider=target.provider,
        base_url=target.base_url,
        api_mode=target.api_mode,
        source="subagent",
        interactive=False,
        toolsets=parent.toolsets,
        blocked_tools=frozenset(blocked),
        max_iterations=config.max_iterations,
        parent_session_id=setup.session_id,
        depth=depth,
        system_prompt=build_subagent_prompt(
            task.goal, task.context, workspace, orchestrator=may_orchestrate, child_depth=depth,
            max_spawn_depth=config.max_spawn_depth,
        ),
        load_context_files=False,
        use_memory=False,
        auto_approve=config.subagent_auto_approve,
        sandbox=parent.sandbox,
    )


async def _run_child(
    setup: SessionSetup, config: DelegationConfig, ctx: CallContext, task: Task, index: int, depth: int, report: ChildReport
) -> None:
    started = trio.current_time()
    options = _child_options(setup, config, task, depth, ctx.shell.cwd)
    # The child runs in its parent's jail: same mode, workspace and temp directory, never wider.
    child_setup = SessionSetup(setup.deps, new_session_id(), options, parent_meter=ctx.token_meter, runtime=setup.runtime)
    child_setup.delegate = delegate_capability(child_setup, config)
    child = SessionActor(child_setup)
    report.model = setup.chain.current.model
    succeeded: set[str] = set()
    try:
        handle = await ctx.spawn(child, f"subagent:{index}")
        subscription: Subscription = await handle.ask(Subscribe(f"parent {ctx.worker_path}"))
        await handle.tell(UserMessage(task.goal, source="subagent"))
        await _follow(child, subscription, ctx, config, report, succeeded)
        child.request_stop("subagent finished", requested_by=ctx.worker_path)
        await handle.wait_stopped()
    except BaseException:
        report.status, report.exit_reason = "interrupted", "parent turn was cancelled"
        raise
    finally:
        report.duration_seconds = round(trio.current_time() - started, 2)
        report.tool_trace = _tool_trace(child_setup.history, succeeded)
        if report.summary:
            report.summary = await _cap_summary(report.summary, setup.deps.home, child_setup.session_id)


async def _follow(
    child: SessionActor,
    subscription: Subscription,
    ctx: CallContext,
    config: DelegationConfig,
    report: ChildReport,
    succeeded: set[str],
) -> None:
    """Relay the child's events to the parent until its turn ends; watch for staleness and the timeout.

    The ids of the child's tool calls that finished ok are added to ``succeeded``.
    """
    in_tool = 0
    with trio.move_on_after(config.child_timeout_seconds or float("inf")) as timeout:
        while True:
            limit = config.stale_tool_seconds if in_tool else config.stale_idle_seconds
            with trio.move_on_after(limit) as quiet:
                event = await _next(subscription)
            if quiet.cancelled_caught:
                _stale(child, ctx, limit, config)
                continue
            if event is None:
                report.status = "interrupted"
                report.exit_reason = "stopped by operator" if child.cancel_reason else "the subagent stopped"
                return
            try:
                ctx.relay(event)
            except Exception:  # a failing relay never harms the child
                log.exception("relaying an event of %s failed", child.path)
            if event.session_id != child.session_id:
                continue  # a grandchild's event, relayed through this child
            if isinstance(event, ToolStarted):
                in_tool += 1
            elif isinstance(event, ToolFinished):
                in_tool = max(in_tool - 1, 0)
                if event.ok:
                    succeeded.add(event.call_id)
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


async def _next(subscription: Subscription) -> Any:
    async for event in subscription:
        return event
    return None


def _stale(child: SessionActor, ctx: CallContext, limit: float, config: DelegationConfig) -> None:
    child.activity = f"stale: no progress for {limit:g}s"
    ctx.emit(f"subagent {child.path} made no progress for {limit:g}s (stale)")
    if config.kill_stale:
        child.request_stop(f"stale for {limit:g}s", requested_by="heartbeat")


def _tool_trace(history: list[dict[str, Any]], succeeded: set[str]) -> list[dict[str, Any]]:
    """One entry per tool call in ``history``; a call is ``ok`` when its ToolFinished said so (calls
    answered without running, such as an unknown tool, have none and are errors)."""
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
            entry["status"] = "ok" if message["tool_call_id"] in succeeded else "error"
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
