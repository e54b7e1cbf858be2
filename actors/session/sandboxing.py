"""execute_code for a session: a sandbox actor under the calling tool call,
whose script's tool calls go through the session's own tool-execution path."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import trio

from actors.sandbox.actor import SandboxActor
from actors.sandbox.result import SandboxToolCall
from actors.session.context import CallContext
from actors.session.workers import ToolExecutor
from config.sandbox import CodeExecutionConfig
from store.protocol import SessionStore
from tools.parallel import ToolConcurrencyGate

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
) -> Callable[[CallContext, str], Awaitable[str]]:
    """The session's ``run_sandbox`` capability; workspaces are created in ``sandbox_dir`` (the session's
    directory under the daemon's runtime directory; None: the system temp directory).

    Each script's tool calls are checked like the model's (guardrails, caps,
    approvals), run concurrently where the batch rules allow (at most
    ``max_parallel_tools`` at once), and recorded in
    the session's transcript log, never in the history the model sees.
    """

    async def run_sandbox(ctx: CallContext, code: str) -> str:
        records: list[SandboxToolCall] = []

        async def call_tool(name: str, args: dict[str, Any]) -> str:
            return (await executor.execute(name, args, ctx)).result

        actor = SandboxActor(
            code,
            call_tool=call_tool,
            allowed_tools=tool_names,
            config=config,
            on_progress=ctx.emit,
            on_tool_call=records.append,
            gate=ToolConcurrencyGate(executor.registry, max_parallel_tools),
            cwd=lambda: ctx.shell.cwd,
            env_passthrough=env_passthrough,
            base_dir=sandbox_dir,
            jail=ctx.jail,
        )
        try:
            return (await actor.run_under(ctx.job.spawn)).to_json()
        finally:
            if actor.result is not None:
                # Kept as the partial result should the call be cancelled right now.
                ctx.progress.last = actor.result.to_json()
            with trio.CancelScope(shield=True), trio.move_on_after(5):
                for record in records:
                    await store.record_transcript(session_id, {"kind": "sandbox_tool_call", **attrs.asdict(record)})

    return run_sandbox
