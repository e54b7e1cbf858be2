"""Tool workers: one actor per tool call under the turn, and the one
tool-execution path (guardrails, dispatch, events) that the turn's calls and
the sandbox's RPC calls share.

A batch runs in parallel only when every call is parallel-safe and no two
path-scoped calls overlap; at most :data:`MAX_TOOL_WORKERS` run at once, and
results are recorded in the calls' order whatever order they finish in.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import attrs
import trio

from actors.base import Actor
from actors.session.context import CallContext, SessionServices
from actors.session.guardrails import (
    ToolCallGuardrailController,
    ToolGuardrailDecision,
    annotate_result,
    blocked_reply,
)
from actors.session.validation import PlannedCall
from messages.events import ToolFinished, ToolStarted
from messages.supervision import ActorState
from tools.dispatch import dispatch
from tools.parallel import can_run_in_parallel
from tools.ansi import redact_output_async
from tools.redact import redact_secrets, redact_tool_result
from tools.registry import ToolRegistry
from tools.results import ToolReply, error_text

__all__ = ["MAX_TOOL_WORKERS", "ToolExecutor", "ToolWorker", "run_batch", "stopped_by_operator_result"]

#: The most tool workers one batch runs at once.
MAX_TOOL_WORKERS = 8
_PREVIEW = 160
_PREVIEW_WINDOW = 8


def stopped_by_operator_result(name: str) -> str:
    """The result a tool call gets when an operator kills its worker."""
    return error_text(f"{name} was stopped by operator before it finished.")


def _interrupted_result(name: str, partial: str | None) -> str:
    if partial:
        return partial
    return json.dumps({"status": "interrupted", "error": f"{name} was interrupted before it finished."}, ensure_ascii=False)


def preview(value: Any, limit: int = _PREVIEW) -> str:
    """A one-line, redacted preview of arguments or a result."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    # Redact a bounded head, not a whole 100 KB result: only the first ``limit`` characters are shown, and
    # a secret that starts among them but runs past the window (a PEM key) is still recognised, cut.
    text = redact_secrets(" ".join(text[: limit * _PREVIEW_WINDOW].split()))
    return text if len(text) <= limit else text[: limit - 1] + "…"


class ToolExecutor:
    """The session's tool-execution path: guardrail, dispatch, guardrail again.

    Used by tool workers and by the sandbox's RPC server alike, so a call made
    from a script is checked and capped exactly like one made by the model.
    """

    def __init__(self, registry: ToolRegistry, guardrails: ToolCallGuardrailController) -> None:
        self.registry = registry
        self.guardrails = guardrails
        # Invariant: set once a halt decision was taken; the turn ends after the batch.
        self.halted: ToolGuardrailDecision | None = None

    async def execute(self, name: str, args: dict[str, Any], ctx: CallContext) -> ToolReply:
        """Run one call through guardrails and dispatch; never raises but Cancelled."""
        before = self.guardrails.before_call(name, args)
        if not before.allows_execution:
            if before.ends_turn:
                self.halted = before
            return blocked_reply(before)
        reply = await dispatch(self.registry, name, args, ctx)
        after = self.guardrails.after_call(name, args, reply.text, failed=not reply.ok)
        if after.ends_turn:
            self.halted = after
        return attrs.evolve(reply, text=annotate_result(reply.text, after))


class ToolWorker(Actor[Any]):
    """Runs one tool call; its result is read by the turn once it has stopped.

    A worker cancelled by its turn (interrupt, budget) keeps the partial result
    the tool reported (a terminal's output so far); one killed by an operator
    gets "stopped by operator".
    """

    kind = "tool"
    mailbox_capacity = 1

    def __init__(
        self, call: PlannedCall, executor: ToolExecutor, services: SessionServices, emoji: str = "", token_meter: Any = None
    ) -> None:
        super().__init__()
        self.token_meter = token_meter
        self.call = call
        self.executor = executor
        self.services = services
        self.emoji = emoji
        self.result: str | None = None
        self.ok = False
        self.duration = 0.0
        self.context: CallContext | None = None

    def snapshot_details(self) -> dict[str, Any]:
        details: dict[str, Any] = {"tool": self.call.name, "call_id": self.call.id}
        if self.context is not None and self.context.progress_count:
            details["progress_events"] = self.context.progress_count
        return details

    async def main(self) -> None:
        call = self.call
        hub = self.services.hub
        self.context = CallContext(
            self.services, call.id, self.path, spawn=self.spawn, token_meter=self.token_meter, run_job=self.run_job
        )
        self.state = ActorState.BUSY
        self.activity = f"{call.name} {preview(call.arguments, 60)}"
        hub.publish(ToolStarted, call_id=call.id, name=call.name, args_preview=preview(call.arguments), emoji=self.emoji)
        started = trio.current_time()
        try:
            reply = await self.executor.execute(call.name, call.arguments, self.context)
            self.result, self.ok = reply.text, reply.ok
        finally:
            self.duration = trio.current_time() - started
            if self.result is None:
                if self.cancel_reason is not None:
                    self.result = stopped_by_operator_result(call.name)
                else:
                    # The partial output never went through dispatch's redaction; it still reaches the model.
                    with trio.CancelScope(shield=True):
                        partial = _interrupted_result(call.name, self.context.last_progress)
                        self.result = await redact_output_async(partial, redact_tool_result)
            hub.publish(
                ToolFinished, call_id=call.id, name=call.name, duration_seconds=round(self.duration, 3),
                ok=self.ok, result_preview=preview(self.result),
            )


async def run_batch(
    spawn: Callable[[Actor[Any], str], Awaitable[Any]], workers: Sequence[ToolWorker], registry: ToolRegistry, cwd: str
) -> None:
    """Run ``workers`` (one per call, in call order), started with the turn's ``spawn``.

    The caller keeps the list: on cancellation, workers that never started
    still have ``result`` None (the turn records them as skipped).
    """
    calls = [(worker.call.name, worker.call.arguments) for worker in workers]

    async def run_one(worker: ToolWorker) -> None:
        handle = await spawn(worker, f"tool:{worker.call.id}")
        await handle.wait_stopped()

    if not can_run_in_parallel(calls, registry, cwd):
        for worker in workers:
            await run_one(worker)
        return
    limiter = trio.CapacityLimiter(MAX_TOOL_WORKERS)

    async def limited(worker: ToolWorker) -> None:
        async with limiter:
            await run_one(worker)

    async with trio.open_nursery() as nursery:
        for worker in workers:
            nursery.start_soon(limited, worker)
