"""Tool calls: one job per call under the turn, and the one tool-execution
path (guardrails, dispatch, events) that the turn's calls and the sandbox's RPC
calls share.

A batch runs in parallel only when every call is parallel-safe and no two
path-scoped calls overlap; at most ``tools.max_parallel_tools`` run at once, and
results are recorded in the calls' order whatever order they finish in.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import attrs
import trio

from actors import Job
from actors.session.checkpointing import CHANGING_TOOLS
from actors.session.context import CallContext, CallProgress, SessionServices
from conversation.validation import DELEGATE_TOOL
from conversation.guardrails import (
    RepeatedFailure,
    ToolCallGuardrailController,
    ToolGuardrailDecision,
    annotate_result,
    blocked_reply,
)
from actors.session.turn_parts import TokenMeter
from conversation.validation import PlannedCall
from messages.events import ToolFinished, ToolStarted
from tools.dispatch import Rejection, RejectionReplies, RepeatedRejection, dispatch
from tools.hooks import NO_HOOKS, HookRunner
from tools.parallel import can_run_in_parallel
from tools.ansi import redact_output_async
from tools.redact import redact_secrets, redact_tool_result
from tools.registry import ToolRegistry
from tools.results import ToolReply, error_text

__all__ = [
    "RejectedAgain", "ToolCall", "ToolCallResult", "ToolExecutor", "preview", "preview_text", "run_batch", "stopped_by_operator_result",
]

_PREVIEW = 160
_PREVIEW_WINDOW = 8
# Built once: json.dumps with an option builds a new encoder at every call, and a preview is made at every
# call's start and end.
_encode_preview = json.JSONEncoder(ensure_ascii=False, default=str).encode


def stopped_by_operator_result(name: str) -> str:
    """The result a tool call gets when an operator kills its job."""
    return error_text(f"{name} was stopped by operator before it finished.")


def _interrupted_result(name: str, partial: str | None) -> str:
    if partial:
        return partial
    return json.dumps({"status": "interrupted", "error": f"{name} was interrupted before it finished."}, ensure_ascii=False)


def preview_text(value: Any) -> str:
    """What :func:`preview` shows a part of: ``value`` itself when it is text, else its JSON."""
    return value if isinstance(value, str) else _encode_preview(value)


def preview(value: Any, limit: int = _PREVIEW, redact: Callable[[str], str] = redact_secrets) -> str:
    """A one-line, redacted preview of arguments or a result.

    Args:
        redact: what redacts it: :func:`~tools.redact.redact_secrets`, or what gives the same text (a
            :class:`~tools.redact.RepeatRedaction`'s, for a run of previews of similar texts).
    """
    text = preview_text(value)
    # Redact a bounded head, not a whole 100 KB result: only the first ``limit`` characters are shown, and
    # a secret that starts among them but runs past the window (a PEM key) is still recognised, cut.
    text = redact(" ".join(text[: limit * _PREVIEW_WINDOW].split()))
    return text if len(text) <= limit else text[: limit - 1] + "…"


class ToolExecutor:
    """The session's tool-execution path: guardrail, checkpoint (before a file tool), dispatch, guardrail again.

    Used by tool calls and by the sandbox's RPC server alike, so a call made
    from a script is checked and capped exactly like one made by the model.
    """

    def __init__(
        self, registry: ToolRegistry, guardrails: ToolCallGuardrailController, hooks: HookRunner = NO_HOOKS
    ) -> None:
        self.registry = registry
        self.guardrails = guardrails
        self.hooks = hooks
        self._rejection_replies = RejectionReplies(registry)
        # Invariant: set once a halt decision was taken; the turn ends after the batch.
        self.halted: ToolGuardrailDecision | None = None

    async def execute(self, name: str, args: dict[str, Any], ctx: CallContext) -> ToolReply:
        """Run one call through guardrails, its hooks and dispatch; never raises but Cancelled.

        A ``pre_tool_call`` hook that blocks the call makes its reason the call's failed result
        (``{"error": reason}``, as in Hermes) and the tool never runs; the guardrails count it as a
        failure, so a model that keeps retrying is stopped as for any failing call. ``post_tool_call``
        hooks see every call's result, a blocked one's too. With no hook configured, this costs two set
        lookups.
        """
        return await self._execute(name, args, ctx, lambda: self._changed(name, args, ctx))

    async def _changed(self, name: str, args: dict[str, Any], ctx: CallContext) -> ToolReply:
        """Dispatch the call, the working directory's checkpoint taken first when ``name`` changes files."""
        if name in CHANGING_TOOLS:
            await ctx.before_change(name)
        return await dispatch(self.registry, name, args, ctx)

    def rejection(self, name: str, args: dict[str, Any], ctx: CallContext) -> Rejection | None:
        """Why ``name(args)`` fails before its tool runs, when :meth:`execute` would answer it with nothing to
        wait for; None when the call must go through :meth:`execute`.

        Nothing to wait for: no hook is configured and no checkpoint is due before a file change.
        Nothing is recorded: :meth:`reject` answers the call.
        """
        hooks = self.hooks
        if hooks.wants("pre_tool_call") or hooks.wants("post_tool_call"):
            return None
        if name in CHANGING_TOOLS and ctx.checkpoint_due():
            return None
        return self._rejection_replies.rejection(name, args)

    def rejected_again(self, name: str, args: dict[str, Any], ctx: CallContext) -> RejectedAgain | None:
        """How the next calls of ``name(args)``, the call :meth:`reject` answered last, would be answered were
        they made again unchanged with nothing else called in between; None when :meth:`rejection` and
        :meth:`reject` would not answer them from what they keep (a hook, a checkpoint due, another call last).
        """
        hooks = self.hooks
        if hooks.wants("pre_tool_call") or hooks.wants("post_tool_call"):
            return None
        if name in CHANGING_TOOLS and ctx.checkpoint_due():
            return None
        rejection = self._rejection_replies.repeated(name, args)
        if rejection is None or not rejection.reply.counts_as_failure:
            return None
        return RejectedAgain(rejection, self.guardrails.repeated_failure(name, args), self.guardrails)

    async def reject(self, name: str, args: dict[str, Any], rejection: Rejection, ctx: CallContext) -> ToolReply:
        """What :meth:`execute` answers a call :meth:`rejection` rejected: the same reply, recorded the same way
        (the guardrails count it, and may block it), without dispatching it.

        No checkpoint is asked for: the call changes no file, and :meth:`rejection` sent it to :meth:`execute`
        when one was due (asked, one taken already, it still took the checkpoints' lock: a scheduler pass).
        """
        return await self._execute(name, args, ctx, lambda: self._rejection_replies.reply(name, rejection, ctx))

    async def _execute(
        self, name: str, args: dict[str, Any], ctx: CallContext, run: Callable[[], Awaitable[ToolReply]]
    ) -> ToolReply:
        """The guardrails and hooks around ``run``, the call's dispatch."""
        before = self.guardrails.before_call(name, args)
        if not before.allows_execution:
            if before.ends_turn:
                self.halted = before
            return blocked_reply(before)
        hooks = self.hooks
        started = trio.current_time()
        reason = await hooks.pre_tool_call(_hook_fields(name, args, ctx), ctx.shell.cwd) if hooks.wants("pre_tool_call") else None
        reply = ToolReply.failure(reason) if reason is not None else await run()
        after = self.guardrails.after_call(name, args, reply.text, failed=reply.counts_as_failure)
        if after.ends_turn:
            self.halted = after
        reply = attrs.evolve(reply, text=annotate_result(reply.text, after))
        if hooks.wants("post_tool_call"):
            status = "blocked" if reason is not None else "ok" if reply.ok else "error"
            await self._after_hooks(name, args, ctx, reply, status, started)
        return reply

    async def _after_hooks(
        self, name: str, args: dict[str, Any], ctx: CallContext, reply: ToolReply, status: str, started: float
    ) -> None:
        fields = {
            **_hook_fields(name, args, ctx), "result": reply.text, "status": status, "error_message": reply.error,
            "duration_ms": round((trio.current_time() - started) * 1000),
        }
        await self.hooks.notify("post_tool_call", fields, ctx.shell.cwd)


@attrs.frozen(eq=False)
class RejectedAgain:
    """A rejected call made again unchanged, answered as :meth:`ToolExecutor.reject` answers it, the guardrails'
    count and note included, so that a thread can tell its answers while the event loop counts them after.

    Sound while nothing else is called: the guardrails' decisions are made from the counts they had
    (:class:`~conversation.guardrails.RepeatedFailure`), and the reply from what the executor kept.

    Attributes:
        rejection: The rejection and its reply.
        guardrails: The guardrails' decisions on the calls made again.
    """

    rejection: RepeatedRejection
    guardrails: RepeatedFailure
    _controller: ToolCallGuardrailController

    @property
    def error(self) -> str | None:
        """Why each such call failed (its reply's error)."""
        return self.rejection.reply.error

    def text(self, repeat: int) -> str | None:
        """The reply's text to the ``repeat``-th call made again (1: the next), any thread; None when it is not
        answered so (the guardrails stop it, the tool's availability or the registry may have changed)."""
        if not (self.rejection.holds() and self.guardrails.allows(repeat)):
            return None
        return annotate_result(self.rejection.reply.text, self.guardrails.after(repeat))

    def answer(self, text: str, ctx: CallContext) -> ToolReply:
        """Count and note a call answered with ``text`` (:meth:`text`), in order, on the event loop; its reply."""
        reply = self.rejection.answer(ctx)
        self._controller.count_repeated(self.guardrails)
        return attrs.evolve(reply, text=text)


def _hook_fields(name: str, args: dict[str, Any], ctx: CallContext) -> dict[str, Any]:
    """What a tool call's hooks are told (Hermes's fields; the result is already redacted)."""
    return {"tool_name": name, "args": args, "session_id": ctx.session_id, "tool_call_id": ctx.call_id, "task_id": ""}


@attrs.frozen
class ToolCallResult:
    """What one tool call returned: the text the model sees, whether it succeeded, how long it took, and
    the images it asked to show the model (browser_vision's screenshot)."""

    text: str
    ok: bool
    duration: float
    images: tuple[str, ...] = ()


class ToolCall(Job[ToolCallResult]):
    """Runs one tool call of a turn (``tool:<call-id>``) and returns its :class:`ToolCallResult`.

    Interrupted with its turn (an interrupt, a budget), it returns the partial result the tool
    reported (a terminal's output so far, what a sandbox or a subagent returned when the interrupt
    reached them); killed by path alone, "stopped by operator". Both are failed results.
    """

    kind = "tool"
    # A sandbox or a subagent running under the call returns its output so far to the tool first.
    waits_for_children = True

    def __init__(
        self, call: PlannedCall, executor: ToolExecutor, services: SessionServices,
        emoji: str = "", token_meter: TokenMeter | None = None,
    ) -> None:
        super().__init__()
        self.call = call
        self.executor = executor
        self.services = services
        # What the tool has shown so far: its own, read by nobody else.
        self.progress = CallProgress()
        self.emoji = emoji
        self.token_meter = token_meter
        # Invariant: set when execute() was cancelled: the result the model gets instead, and the call's time.
        self._unfinished: ToolCallResult | None = None
        # Only delegate_task starts an actor under the call (its subagent session); the other tools' calls
        # run in their cancel scope alone (a sandbox's script is a child job, run in the call's own task).
        self.starts_tasks = call.name == DELEGATE_TOOL

    def snapshot_details(self) -> dict[str, Any]:
        details: dict[str, Any] = {"tool": self.call.name, "call_id": self.call.id}
        if self.progress.count:
            details["progress_events"] = self.progress.count
        return details

    async def execute(self) -> ToolCallResult:
        call = self.call
        context = CallContext(self.services, call.id, self, self.progress, self.token_meter)
        self.activity = f"{call.name} {preview(call.arguments, 60)}"
        self.services.hub.publish(ToolStarted, call_id=call.id, name=call.name, args_preview=preview(call.arguments), emoji=self.emoji)
        started = trio.current_time()
        try:
            reply = await self.executor.execute(call.name, call.arguments, context)
        except BaseException:
            text = await self._unfinished_result()
            self._unfinished = ToolCallResult(text, False, trio.current_time() - started)
            self._publish_finished(text, ok=False, duration=self._unfinished.duration)
            raise
        duration = trio.current_time() - started
        self._publish_finished(reply.text, ok=reply.ok, duration=duration)
        return ToolCallResult(reply.text, reply.ok, duration, reply.images)

    async def interrupted(self) -> ToolCallResult:
        """The partial result, or "stopped by operator", as execute() published it on its way out."""
        assert self._unfinished is not None  # execute() sets it whenever it is cancelled
        return self._unfinished

    def _publish_finished(self, text: str, *, ok: bool, duration: float) -> None:
        call = self.call
        self.services.hub.publish(
            ToolFinished, call_id=call.id, name=call.name, duration_seconds=round(duration, 3), ok=ok,
            result_preview=preview(text),
        )

    async def _unfinished_result(self) -> str:
        if self.interrupt_requested and not self.interrupted_by_parent:
            return stopped_by_operator_result(self.call.name)
        # The partial output never went through dispatch's redaction; it still reaches the model.
        with trio.CancelScope(shield=True):
            partial = _interrupted_result(self.call.name, self.progress.last)
            redacted = await redact_output_async(partial, redact_tool_result)
        return redacted


async def run_batch(
    run_one: Callable[[ToolCall], Awaitable[None]], jobs: Sequence[ToolCall], registry: ToolRegistry, cwd: str, limit: int
) -> None:
    """Run ``jobs`` (one per call, in call order) with the turn's ``run_one``.

    They run at once, at most ``limit`` together (``tools.max_parallel_tools``), when
    every call is parallel-safe and no two path-scoped calls overlap; else one by one.
    """
    calls = [(job.call.name, job.call.arguments) for job in jobs]
    if not can_run_in_parallel(calls, registry, cwd):
        for job in jobs:
            await run_one(job)
        return
    limiter = trio.CapacityLimiter(limit)

    async def limited(job: ToolCall) -> None:
        async with limiter:
            await run_one(job)

    async with trio.open_nursery() as nursery:
        for job in jobs:
            nursery.start_soon(limited, job)
