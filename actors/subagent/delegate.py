"""delegate_task as supervised child sessions.

Each task is a :class:`SubagentJob` (``…/turn/tool:<call-id>/delegate:<n>``), a
``Job[ChildReport]``: it starts a session actor beside it under the calling tool
call (``…/turn/tool:<call-id>/subagent:<n>``, a session like any other, so steer,
``ps`` and ``kill`` find it) with a fresh history, the focused subagent prompt,
the parent's provider, its own iteration budget, and the blocked tools removed;
follows the child's turn; and returns the task's :class:`ChildReport`. All jobs
of a batch run at once; the parent's turn waits for all of them. The child's
events are relayed to the parent's subscribers under the child's path. A child
runs under its parent's jail. Cancelling the parent's turn cancels every child
(they are children of the tool call); an operator's kill of one child (its
session or its job) reports that task as ``interrupted`` while its siblings go
on. A child quiet for too long is reported stale to the parent (and stopped,
with ``delegation.kill_stale``).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import attrs
import trio

from actors import ActorHandle, Job, JobStopped
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

__all__ = ["ChildReport", "SubagentJob", "delegate_capability"]

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
        reports: dict[int, ChildReport] = {}

        async def run(index: int, task: Task) -> None:
            job = SubagentJob(parent, config, ctx, task, depth, index)
            try:
                reports[index] = await ctx.job.run_job(job, f"delegate:{index}")
            except JobStopped:
                # The call is being interrupted and the task never started; the call's own result replaces these.
                reports[index] = ChildReport(task_index=index, status="interrupted", exit_reason="parent turn was cancelled")

        async with trio.open_nursery() as nursery:
            for index, task in enumerate(request.tasks):
                nursery.start_soon(run, index, task)
        return ToolResult(
            {"results": [attrs.asdict(reports[i]) for i in sorted(reports)], "total_duration_seconds": round(trio.current_time() - started, 2)}
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


class SubagentJob(Job[ChildReport]):
    """One delegated task: runs a child session beside it under the tool call and returns its report.

    Interrupted (killed by path), it stops the child and returns the report so far, ``interrupted``.

    Args:
        parent: the delegating session.
        config: the daemon's delegation settings.
        ctx: the delegate_task call's context (the child session starts under ``ctx.job``).
        task: what the child is to do.
        depth: the child's depth below the top-level session.
        index: the task's place in the batch (the child is ``subagent:<index>``).
    """

    kind = "delegate"

    def __init__(
        self, parent: ParentSession, config: DelegationConfig, ctx: CallContext, task: Task, depth: int, index: int
    ) -> None:
        super().__init__()
        self.parent = parent
        self.config = config
        self.ctx = ctx
        self.task = task
        self.depth = depth
        self.child_id = new_session_id()
        # Invariant: the report as far as the child has got (the job's own; the caller gets it returned).
        self._report = ChildReport(task_index=index)
        self._started = 0.0

    async def execute(self) -> ChildReport:
        parent, config, ctx, report = self.parent, self.config, self.ctx, self._report
        self._started = trio.current_time()
        options = _child_options(parent, config, self.task, self.depth, ctx.shell.cwd)
        # The child runs in its parent's jail: same mode, workspace and temp directory, never wider.
        spec = SessionSpec(
            parent.deps, self.child_id, options, parent_meter=ctx.token_meter, runtime=parent.runtime,
            delegate=lambda child: delegate_capability(child, config),
        )
        report.model = parent.model.current
        # Which of the child's tool calls succeeded, from its ToolFinished events.
        succeeded: dict[str, bool] = {}
        handle: ActorHandle[Any] | None = None
        try:
            handle = await ctx.job.spawn(SessionActor(spec), f"subagent:{report.task_index}")
            self.activity = f"following {handle.path}"
            subscription = await handle.ask(Subscribe(f"parent {ctx.job.path}"))
            await handle.tell(UserMessage(self.task.goal, source="subagent"))
            await _follow(handle, self.child_id, subscription, ctx, config, report, succeeded)
            handle.stop("subagent finished", requested_by=ctx.job.path)
            await handle.wait_stopped()
        except BaseException:
            operator = self.interrupt_requested and not self.interrupted_by_parent
            why = "stopped by operator" if operator else "parent turn was cancelled"
            if handle is not None:
                # Killed alone, the job stops its child (a cancel from above stops them both).
                handle.stop(why, requested_by=self.path)
                if not report.exit_reason:  # an exit reason: the child's end was seen, and shown
                    _relay_end(ctx, handle, self.child_id, why)
            report.status, report.exit_reason = "interrupted", why
            report.duration_seconds = self._elapsed()
            raise
        report.duration_seconds = self._elapsed()
        report.tool_trace = await _tool_trace(parent.deps.store, self.child_id, succeeded)
        if report.summary:
            report.summary = await _cap_summary(report.summary, parent.deps.home, self.child_id)
        return report

    async def interrupted(self) -> ChildReport:
        """Killed by path: the report so far, ``interrupted``, as execute() left it on its way out."""
        return self._report

    def _elapsed(self) -> float:
        return round(trio.current_time() - self._started, 2)


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
