"""execute_code for a session: a sandbox job under the calling tool call,
whose script's tool calls go through the session's own tool-execution path."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import trio

from actors.sandbox import SandboxJob, SandboxResult, SandboxStatus, SandboxToolCall, SpareInterpreters
from actors.session.context import CallContext
from actors.session.workers import RejectedAgain, ToolExecutor, preview, preview_text
from config.sandbox import CodeExecutionConfig
from messages.events import ToolFinished, ToolStarted
from store.protocol import SessionStore
from tools.parallel import ToolConcurrencyGate
from tools.redact import RepeatRedaction
from tools.results import ToolReply, ToolResult

__all__ = ["sandbox_runner"]

log = logging.getLogger("hermes_actors.session.sandbox")

#: Calls answered at once whose lines are held before they are shown anyway (two events each, well within a
#: subscriber's buffer of events).
MAX_HELD_CALLS = 16


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
    spares: SpareInterpreters | None = None,
) -> Callable[[CallContext, str], Awaitable[ToolResult]]:
    """The session's ``run_sandbox`` capability; workspaces are created in ``sandbox_dir`` (the session's
    directory under the daemon's runtime directory; None: the system temp directory). A run takes the
    session's spare interpreter from ``spares`` when one waits for it, and has the next one started after it
    (None: every run starts cold).

    Each script's tool calls are checked like the model's (guardrails, caps,
    approvals), run concurrently where the batch rules allow (at most ``max_parallel_tools``
    at once), and recorded in
    the session's transcript log, never in the history the model sees. A call whose tool rejects it
    before running (arguments that fail the tool's checks) is answered by the RPC server without a job,
    through the same guardrails, events and records.
    """

    async def run_sandbox(ctx: CallContext, code: str) -> ToolResult:
        records: list[SandboxToolCall] = []

        lines = _ScriptLines(ctx)

        async def call_tool(name: str, args: dict[str, Any]) -> ToolReply:
            return await lines.run(name, args, lambda: executor.execute(name, args, ctx))

        async def answer_rejected(name: str, args: dict[str, Any]) -> ToolReply | None:
            rejection = executor.rejection(name, args, ctx)
            if rejection is None:
                return None
            return await lines.answer_at_once(name, args, lambda: executor.reject(name, args, rejection, ctx))

        def repeat_rejected(name: str, args: dict[str, Any]) -> _AnsweredAgain | None:
            again = executor.rejected_again(name, args, ctx)
            return None if again is None else _AnsweredAgain(again, lines, name, args, ctx)

        def progress(text: str) -> None:
            lines.show_held()
            ctx.emit(text)

        def record(call: SandboxToolCall) -> None:
            records.append(call)
            lines.show_if_many()

        job = SandboxJob(
            code,
            call_tool=call_tool,
            answer_rejected=answer_rejected,
            repeat_rejected=repeat_rejected,
            allowed_tools=tool_names,
            config=config,
            on_progress=progress,
            on_tool_call=record,
            gate=ToolConcurrencyGate(executor.registry, max_parallel_tools),
            cwd=lambda: ctx.shell.cwd,
            # The session's loaded skills add their variables to the configured ones.
            env_passthrough=(*env_passthrough, *sorted(ctx.shell.passthrough)),
            base_dir=sandbox_dir,
            jail=ctx.jail,
            spares=spares,
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
            lines.show_held()
            await record_calls(None)  # cancelled from above: there is no result
            raise
        lines.show_held()
        if result.status is SandboxStatus.INTERRUPTED:
            # The call's partial result, should the interrupt that stopped the script end the call too.
            ctx.progress.last = result.tool_result().render()
        await record_calls(result)
        return result.tool_result()

    return run_sandbox


@attrs.frozen
class _EndedCall:
    """A script's call that ended: what its tool lines show (``reply`` None: it raised or was cancelled)."""

    call_id: str
    name: str
    args: dict[str, Any]
    duration: float
    reply: ToolReply | None

    def finished(self, redact: Callable[[str], str]) -> dict[str, Any]:
        """The fields of its :class:`ToolFinished`, its result's preview redacted by ``redact``."""
        reply = self.reply
        return {
            "call_id": self.call_id, "name": self.name, "duration_seconds": round(self.duration, 3),
            "ok": reply is not None and reply.ok,
            "result_preview": preview(reply.text, redact=redact) if reply is not None else "",
        }


class _ScriptLines:
    """The tool lines of one script's calls, each shown as a tool line of its own (a script's calls are what it did).

    A call that runs is shown as it starts and as it ends. The lines of calls answered at once (rejected before
    running: they take no time) are held, and shown with the run's next progress line (at most one per
    0.25 s while the script calls, one per ``progress_interval_seconds`` while it is quiet), before the next
    call that runs, at the run's end, or once :data:`MAX_HELD_CALLS` are held when a call is recorded: every line
    is shown, in order, and many calls' lines reach each client in one delivery instead of one each. A held call
    keeps what its lines show; their previews are made when they are shown.
    """

    def __init__(self, ctx: CallContext) -> None:
        self._ctx = ctx
        self._numbers = itertools.count(1)
        self._held: list[_EndedCall] = []
        # The last held call's arguments as text and their preview: a script retrying a call in a loop has
        # the same arguments shown for each call, made once.
        self._shown_args = ("", "")
        # Their results' previews: a call retried in a loop has a result that differs by its loop warning's
        # count alone, told free of secrets in one look.
        self._redaction = RepeatRedaction()

    async def run(self, name: str, args: dict[str, Any], run: Callable[[], Awaitable[ToolReply]]) -> ToolReply:
        """``run()``, the call's reply, shown as it starts and ends (after the lines held before it)."""
        self.show_held()
        show = self._ctx.show_inner_call
        call_id = f"{self._ctx.call_id}.{next(self._numbers)}"
        show(ToolStarted, call_id=call_id, name=name, args_preview=preview(args))
        redact = self._redaction.redact
        return await _timed(call_id, name, args, run, lambda call: show(ToolFinished, **call.finished(redact)))

    async def answer_at_once(
        self, name: str, args: dict[str, Any], answer: Callable[[], Awaitable[ToolReply]]
    ) -> ToolReply:
        """``answer()``, the reply to a call answered at once; its lines are held."""
        return await _timed(f"{self._ctx.call_id}.{next(self._numbers)}", name, args, answer, self._held.append)

    def answered(self, name: str, args: dict[str, Any], duration: float, reply: ToolReply) -> None:
        """Hold the lines of a call answered at once elsewhere (by the RPC server's thread), as :meth:`answer_at_once`
        holds them."""
        self._held.append(_EndedCall(f"{self._ctx.call_id}.{next(self._numbers)}", name, args, duration, reply))

    def show_held(self) -> None:
        """Show the lines held so far."""
        held, self._held = self._held, []
        show = self._ctx.show_inner_call
        redact = self._redaction.redact
        for call in held:
            show(ToolStarted, call_id=call.call_id, name=call.name, args_preview=self._args_preview(call.args))
            show(ToolFinished, **call.finished(redact))

    def _args_preview(self, args: dict[str, Any]) -> str:
        """``preview(args)``, made again only when the text of the arguments differs from the last call's."""
        text = preview_text(args)
        if text != self._shown_args[0]:
            self._shown_args = (text, preview(text))
        return self._shown_args[1]

    def show_if_many(self) -> None:
        """Show the lines held so far once :data:`MAX_HELD_CALLS` are held (called as each call is recorded)."""
        if len(self._held) >= MAX_HELD_CALLS:
            self.show_held()


@attrs.frozen(eq=False)
class _AnsweredAgain:
    """A script's call answered at once, made again unchanged: answered by the RPC server's thread from
    ``again``, then counted and held as :meth:`_ScriptLines.answer_at_once` holds it (the server's
    :class:`~actors.sandbox.calls.AnsweredAgain`)."""

    again: RejectedAgain
    lines: _ScriptLines
    name: str
    args: dict[str, Any]
    ctx: CallContext

    @property
    def error(self) -> str | None:
        """Why each such call failed."""
        return self.again.error

    def text(self, repeat: int) -> str | None:
        """The answer's text to the ``repeat``-th call made again; None when the event loop must answer it."""
        return self.again.text(repeat)

    def record(self, text: str, duration: float) -> None:
        """Count one call answered with ``text`` (the guardrails, the read ledger, the log) and hold its lines."""
        self.lines.answered(self.name, self.args, duration, self.again.answer(text, self.ctx))


async def _timed(
    call_id: str, name: str, args: dict[str, Any], run: Callable[[], Awaitable[ToolReply]],
    ended: Callable[[_EndedCall], None],
) -> ToolReply:
    """``run()``, the call's reply; ``ended`` is told how the call ended, whether it returned or raised."""
    started = trio.current_time()
    reply: ToolReply | None = None
    try:
        reply = await run()
        return reply
    finally:
        ended(_EndedCall(call_id, name, args, trio.current_time() - started, reply))
