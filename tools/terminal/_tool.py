"""The ``terminal`` tool: its handler and the registration of ``terminal`` and ``process``."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from config.terminal import ApprovalsConfig, TerminalConfig
from tools.approval import ApprovalBook, authorize_command
from tools.approval_allowlist import PermanentAllows
from tools.background import PTY_NEEDS_PIPE_NOTE, BackgroundSpec, ProcessLimitReached, pty_breaks_command
from tools.errors import CapabilityUnavailable, ToolError
from tools.process_tool import PROCESS_SCHEMA, ProcessTool
from tools.results import ToolResult
from tools.terminal._exit_codes import exit_code_meaning
from tools.terminal._foreground import ForegroundResult, ForegroundRun
from tools.terminal._schema import BACKGROUND_SILENT_HINT, TERMINAL_SCHEMA
from tools.terminal._shell import build_shell_env

if TYPE_CHECKING:
    from tools.context import ToolContext
    from tools.registry import ToolRegistry

__all__ = ["TerminalTools", "register_terminal_tools"]

log = logging.getLogger(__name__)


def _nearest_directory(path: str, host_path: Callable[[str], str]) -> str:
    """``path`` if it is a directory, else its nearest existing ancestor (checked at ``host_path(path)``)."""
    while not os.path.isdir(host_path(path)):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return path


class TerminalTools:
    """The terminal and process tools, with the state they share across sessions.

    Attributes:
        approvals: per-session "allow for this session" answers (see ``tools.approval``).
    """

    def __init__(self, config: TerminalConfig, approvals_config: ApprovalsConfig, config_path: Path | None = None) -> None:
        self.config = config
        self.approvals_config = approvals_config
        self.approvals = ApprovalBook(PermanentAllows(approvals_config.allow, config_path), os.path.expanduser("~"))
        self.process_tool = ProcessTool(config)

    async def terminal(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Handler of ``terminal``: approve if dangerous, then run in the foreground or background.

        ``pty`` runs a background command on a pseudo-terminal (30 rows by 120 columns); a foreground
        command runs without one whatever ``pty`` says, as in Hermes Agent. A foreground result explains a conventional
        nonzero status in ``exit_code_meaning`` and is ``unsuccessful`` for any nonzero status (the
        guardrails count it); a background start without ``notify_on_complete`` or ``watch_patterns``
        carries Hermes's ``hint`` that nothing will report its exit.

        While a foreground command runs, its newest output goes to ``ctx.emit`` (at most once per
        ``progress_interval_seconds``). When the call is cancelled (interrupt, budget), the
        command and all it started are stopped and one last progress line is emitted: the output so
        far followed by ``[Command interrupted]``. A session that records partial results keeps
        the last progress line of a cancelled call as its tool result.

        Raises:
            ToolError: a bad argument, a denied command, a command that could not start, or a background
                start that failed.
        """
        command = args.get("command")
        if not isinstance(command, str) or not command.strip():
            raise ToolError("terminal needs a non-empty 'command' string.")
        background = bool(args.get("background", False))
        asked = args.get("timeout")
        timeout = self.config.timeout if asked is None else asked
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ToolError("'timeout' must be a positive number of seconds.")
        # As Hermes: the cap is on what the model asks for; the configured default may exceed it.
        if not background and asked is not None and timeout > self.config.max_foreground_timeout:
            raise ToolError(
                f"Foreground timeout {timeout:g}s exceeds the maximum of {self.config.max_foreground_timeout:g}s. "
                "Run long commands with background=true and notify_on_complete=true (you are told when "
                "they exit), or check on them with the process tool (action='poll', 'log' or 'wait')."
            )
        cwd = ctx.shell.cwd
        notes: list[str] = []
        workdir = args.get("workdir")
        # The shell's paths are as a jailed process sees them (``/tmp`` is the session's own).
        host_path = ctx.jail.policy.host_path
        if workdir:
            cwd = os.path.normpath(os.path.join(ctx.shell.cwd, os.path.expanduser(str(workdir))))
            if not await trio.to_thread.run_sync(os.path.isdir, host_path(cwd)):
                raise ToolError(f"workdir {cwd} does not exist or is not a directory.")
        elif background:
            cwd = await self._existing_cwd(ctx, notes)
        if not ctx.shell.env:
            ctx.shell.env = build_shell_env(os.environ, (*self.config.env_passthrough, *sorted(ctx.shell.passthrough)))

        outcome = await authorize_command(command, ctx, self.approvals, self.approvals_config)
        if not outcome.allowed:
            log.info("terminal command denied (by %s) in session %s", outcome.decided_by, ctx.session_id)
            raise ToolError(outcome.denial_message(), output="", exit_code=-1, status="denied")
        if background:
            return await self._start_background(command, cwd, args, ctx, notes)
        result = await self._run_foreground(command, cwd, float(timeout), keep_cwd=not workdir, ctx=ctx)
        if result.cwd_missing and not workdir and await self._existing_cwd(ctx, notes) != cwd:
            # The spawn looked at the directory (on its own thread): only a missing one costs a look here.
            result = await self._run_foreground(command, ctx.shell.cwd, float(timeout), keep_cwd=True, ctx=ctx)
        payload = result.to_dict()
        if notes:
            payload["note"] = " ".join([*notes, *([result.note] if result.note else [])])
        if result.error is not None:
            # The command never ran: a failure, with the shell's fields after the message.
            raise ToolError(payload.pop("error"), **payload)
        meaning = exit_code_meaning(command, result.exit_code)
        if meaning is not None:
            payload["exit_code_meaning"] = meaning
        # The text stays Hermes's; the guardrails count a nonzero status as a failed call, as Hermes does.
        return ToolResult(payload, unsuccessful=result.exit_code != 0)

    async def _existing_cwd(self, ctx: ToolContext, notes: list[str]) -> str:
        """The session's working directory, moved up to its nearest existing ancestor (with a note) when it
        was removed under the session (rm -rf of the cwd, a deleted checkout): rather than fail every later
        command."""
        cwd = ctx.shell.cwd
        existing = await trio.to_thread.run_sync(_nearest_directory, cwd, ctx.jail.policy.host_path)
        if existing != cwd:
            notes.append(f"The working directory {cwd} no longer exists; the command ran in {existing}.")
            ctx.shell.cwd = existing
        return existing

    async def process(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Handler of ``process``: see ``tools.process_tool``."""
        return await self.process_tool.handle(args, ctx)

    async def _run_foreground(
        self, command: str, cwd: str, timeout: float, *, keep_cwd: bool, ctx: ToolContext
    ) -> ForegroundResult:
        run = ForegroundRun(command, cwd=cwd, env=dict(ctx.shell.env), config=self.config, jail=ctx.jail, on_output=ctx.emit)
        finished = False
        try:
            with trio.move_on_after(timeout) as scope:
                result = await run.run()
            finished = True
        finally:
            # Only a cancellation from outside gets here unfinished (run() reports its own
            # errors as results); Cancelled may arrive wrapped in a group, hence no except.
            if not finished:
                ctx.emit(run.partial_result("interrupted").output)
        if scope.cancelled_caught:
            result = run.partial_result("timeout", timeout=timeout)
        if result.shell is not None:
            if keep_cwd:
                ctx.shell.cwd = result.shell.cwd
            ctx.shell.env = result.shell.env
        return result

    async def _start_background(
        self, command: str, cwd: str, args: dict[str, Any], ctx: ToolContext, notes: list[str]
    ) -> ToolResult:
        # Only a background process gets a pseudo-terminal, as in Hermes Agent.
        pty = bool(args.get("pty", False))
        extra: dict[str, Any] = {}
        if pty and pty_breaks_command(command):
            pty = False
            extra["pty_note"] = PTY_NEEDS_PIPE_NOTE
        notify = bool(args.get("notify_on_complete", False))
        patterns = args.get("watch_patterns") or []
        if not isinstance(patterns, list) or not all(isinstance(p, str) and p for p in patterns):
            raise ToolError("'watch_patterns' must be a list of non-empty strings.")
        if notify and patterns:
            extra["watch_patterns_ignored"] = (
                "watch_patterns were dropped because notify_on_complete is set: together they would notify "
                "twice. You will be told once, when it exits."
            )
            patterns = []
        spec = BackgroundSpec(
            command=command,
            cwd=cwd,
            env=dict(ctx.shell.env),
            notify_on_complete=notify,
            watch_patterns=tuple(patterns),
            shell=self.config.shell,
            kill_grace_seconds=self.config.kill_grace_seconds,
            pty=pty,
            jail=ctx.jail,
        )
        try:
            info = await ctx.start_background(spec)
        except ProcessLimitReached as exc:
            raise ToolError(str(exc)) from None
        except CapabilityUnavailable:
            raise ToolError("Background processes are not available here; run the command in the foreground.") from None
        if info.error:
            raise ToolError(info.error, session_id=info.process_id)
        # Hermes's fields of a background start first, then what the process table knows of it.
        result: dict[str, Any] = {"output": "Background process started", "exit_code": 0, "error": None}
        result |= info.to_dict() | extra
        if not notify and not patterns:
            result["hint"] = BACKGROUND_SILENT_HINT
        notes.append(
            f"Started in the background. Use process(action='poll' or 'log', session_id='{info.process_id}') "
            "to check on it, 'wait' to block until it exits, 'kill' to stop it."
        )
        result["note"] = " ".join(notes)
        return ToolResult(result)


def register_terminal_tools(
    registry: ToolRegistry, config: TerminalConfig, approvals_config: ApprovalsConfig | None = None,
    config_path: Path | None = None,
) -> TerminalTools:
    """Register ``terminal`` and ``process`` (toolset ``terminal``); returns the shared tool object.

    Keep the returned object to restore or forget a session's approvals
    (``tools.approvals.restore(session_id, keys)`` / ``forget(session_id)``). ``config_path``
    is the ``config.yaml`` an ``always`` answer is saved in (None: kept in memory only).
    """
    tools = TerminalTools(config, approvals_config or ApprovalsConfig(), config_path)
    for name, schema, handler, emoji in (
        ("terminal", TERMINAL_SCHEMA, tools.terminal, "💻"),
        ("process", PROCESS_SCHEMA, tools.process, "⚙️"),
    ):
        # Never parallel: commands of one session share its shell state and approvals.
        registry.register(
            name=name,
            toolset="terminal",
            schema=schema,
            handler=handler,
            max_result_size_chars=100_000,
            parallel_safe=False,
            emoji=emoji,
        )
    return tools
