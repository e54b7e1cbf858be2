"""execute_code for a session: a sandbox job under the calling tool call,
whose script's tool calls go through the session's own tool-execution path."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from actors.sandbox import SandboxJob, SandboxResult, SandboxStatus, SandboxToolCall
from actors.session.context import CallContext
from actors.session.workers import ToolExecutor, preview
from config.sandbox import CodeExecutionConfig
from messages.events import ToolFinished, ToolStarted
from store.protocol import SessionStore
from tools.parallel import ToolConcurrencyGate
from tools.results import ToolReply, ToolResult

__all__ = ["sandbox_runner"]

log = logging.getLogger("hermes_actors.session.sandbox")


def sandbox_runner(
    executor: ToolExecutor,
    *,
    session_id: str,
    tool_names: frozenset[str],
    config: CodeExecutionConfig,
    env_passthrough: tuple[str, ...],
    store: SessionStore,
    max_parallel_tools: int,
    sandbox_dir: str | None = None,
) -> Callable[[CallContext, str], Awaitable[ToolResult]]:
    """The session's ``run_sandbox`` capability; workspaces are created in ``sandbox_dir`` (the session's
    directory under the daemon's runtime directory; None: the system temp directory).

    Each script's tool calls are checked like the model's (guardrails, caps,
    approvals), run concurrently where the batch rules allow (at most ``max_parallel_tools``
    at once), and recorded in
    the session's transcript log, never in the history the model sees. A call whose tool rejects it
    before running (arguments that fail the tool's checks) is answered by the RPC server without a job,
    through the same guardrails, events and records.
    """

    async def run_sandbox(ctx: CallContext, code: str) -> ToolResult:
        records: list[SandboxToolCall] = []

        numbers = itertools.count(1)

        async def shown(name: str, args: dict[str, Any], run: Callable[[], Awaitable[ToolReply]]) -> ToolReply:
            # Shown as tool lines of their own: a script's calls are what it did.
            call_id = f"{ctx.call_id}.{next(numbers)}"
            ctx.show_inner_call(ToolStarted, call_id=call_id, name=name, args_preview=preview(args))
            started = trio.current_time()
            reply: ToolReply | None = None
            try:
                reply = await run()
                return reply
            finally:
                ctx.show_inner_call(
                    ToolFinished, call_id=call_id, name=name, duration_seconds=round(trio.current_time() - started, 3),
                    ok=reply is not None and reply.ok, result_preview=preview(reply.text) if reply is not None else "",
                )

        async def call_tool(name: str, args: dict[str, Any]) -> ToolReply:
            return await shown(name, args, lambda: executor.execute(name, args, ctx))

        async def answer_rejected(name: str, args: dict[str, Any]) -> ToolReply | None:
            rejection = executor.rejection(name, args, ctx)
            if rejection is None:
                return None
            return await shown(name, args, lambda: executor.reject(name, args, rejection, ctx))

        job = SandboxJob(
            code,
            call_tool=call_tool,
            answer_rejected=answer_rejected,
            allowed_tools=tool_names,
            config=config,
            on_progress=ctx.emit,
            on_tool_call=records.append,
            gate=ToolConcurrencyGate(executor.registry, max_parallel_tools),
            cwd=lambda: ctx.shell.cwd,
            # The session's loaded skills add their variables to the configured ones.
            env_passthrough=(*env_passthrough, *sorted(ctx.shell.passthrough)),
            base_dir=sandbox_dir,
            jail=ctx.jail,
        )

        async def record_calls(result: SandboxResult | None) -> None:
            transcript = [record.to_record() for record in records]
            if result is not None and result.unrecorded_calls:
                transcript.append({"kind": "sandbox_tool_calls_unrecorded", "refused": result.unrecorded_calls})
            with trio.CancelScope(shield=True), trio.move_on_after(5):
                await store.record_transcript(session_id, transcript)

        try:
            # Interrupted (with the call, or alone by path), the sandbox returns the script's output so far.
            result = await ctx.job.run_job(job, "sandbox")
        except BaseException:
            await record_calls(None)  # cancelled from above: there is no result
            raise
        if result.status is SandboxStatus.INTERRUPTED:
            # The call's partial result, should the interrupt that stopped the script end the call too.
            ctx.progress.last = result.tool_result().render()
        await record_calls(result)
        return result.tool_result()

    return run_sandbox
