"""The ``process`` tool: look after background processes started by ``terminal``.

Actions: ``list``, ``poll`` (status, pid, uptime, last output), ``log`` (a page of lines,
by default the last 200), ``wait`` (until exit, at most ``terminal.timeout`` seconds), ``kill`` (SIGTERM to
it and all it started, then SIGKILL), ``write`` / ``submit`` (to stdin; submit adds a newline) and
``close`` (end of file on stdin).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import trio

from config.terminal import TerminalConfig
from tools.background import ProcessNotFound, ProcessRecord, ProcessStatus, StdinUnavailable
from tools.errors import ToolError
from tools.results import ToolResult

if TYPE_CHECKING:
    from tools.context import ToolContext

__all__ = ["PROCESS_ACTIONS", "PROCESS_SCHEMA", "ProcessTool"]

PROCESS_ACTIONS = ("list", "poll", "log", "wait", "kill", "write", "submit", "close")

# How much of each process's output action='list' shows (Hermes's figure).
_LIST_PREVIEW_CHARS = 200

PROCESS_SCHEMA: dict[str, Any] = {
    "name": "process",
    "description": (
        "Manage background processes started with terminal(background=true). "
        "list: all processes; poll: status and recent output; log: output lines (offset/limit, default last 200); "
        "wait: block until it exits or the timeout passes (at most the terminal timeout, 180s by default); "
        "kill: stop it and its children; write: send text to its stdin (no newline); submit: send text plus "
        "Enter, to answer a prompt; close: close its stdin (end of file)."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": list(PROCESS_ACTIONS), "description": "What to do."},
            "session_id": {
                "type": "string",
                "description": "The process id (proc_...) returned by terminal; needed by every action but list.",
            },
            "data": {"type": "string", "description": "write/submit: the text to send."},
            "timeout": {
                "type": "integer",
                "minimum": 1,
                "description": "wait: seconds to block at most; the output so far comes back if it is still running.",
            },
            "offset": {"type": "integer", "description": "log: first line, from 0 (default: the last 200 lines)."},
            "limit": {"type": "integer", "minimum": 1, "description": "log: how many lines."},
        },
        "required": ["action"],
    },
}


class ProcessTool:
    """Handler of the ``process`` tool, reading the session's ``ProcessTable`` through the context."""

    def __init__(self, config: TerminalConfig) -> None:
        self._background = config.background
        self._kill_grace = config.kill_grace_seconds
        self._terminal_timeout = config.timeout

    async def handle(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Run one action.

        Raises:
            ToolError: an unknown action, a missing or unknown process, or a bad argument; the
                message says what to do instead.
        """
        await trio.lowlevel.checkpoint()
        action = args.get("action")
        if action not in PROCESS_ACTIONS:
            raise ToolError(f"Unknown action {action!r}. Use one of: {', '.join(PROCESS_ACTIONS)}.")
        table = ctx.processes
        if table is None:
            raise ToolError("Background processes are not available in this context.")
        if action == "list":
            # As Hermes lists them: each with the last characters of its output.
            infos = [
                record.info().to_dict() | {"output_preview": record.output.tail(_LIST_PREVIEW_CHARS)}
                for record in table.records()
            ]
            return ToolResult({"processes": infos, "count": len(infos)})
        process_id = args.get("session_id")
        if not isinstance(process_id, str) or not process_id:
            raise ToolError(f"Action {action!r} needs the process's session_id (see action='list').")
        try:
            record = table.get(process_id)
        except ProcessNotFound as exc:
            raise ToolError(str(exc), status="not_found") from None
        if action == "poll":
            return self._poll(record)
        if action == "log":
            return await self._log(record, args)
        if action == "wait":
            return await self._wait(record, args, ctx)
        if action == "kill":
            return await self._kill(record)
        if action == "close":
            return self._close(record)
        return await self._write(record, args, newline=action == "submit")

    def _poll(self, record: ProcessRecord) -> ToolResult:
        info = record.info()
        payload = info.to_dict()
        payload["output_preview"] = record.output.tail(self._background.poll_tail_chars)
        if info.error:
            # A process that could not start: polling it reports that failure.
            raise ToolError(payload.pop("error"), **payload)
        return ToolResult(payload)

    async def _log(self, record: ProcessRecord, args: dict[str, Any]) -> ToolResult:
        offset = args.get("offset")
        limit = args.get("limit", self._background.log_default_lines)
        if offset is not None and (isinstance(offset, bool) or not isinstance(offset, int) or offset < 0):
            raise ToolError("'offset' must be a line number >= 0.")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ToolError("'limit' must be a positive number of lines.")
        page = record.output.lines(offset, limit)
        payload: dict[str, Any] = {
            "session_id": record.process_id,
            "status": record.status.value,
            "output": page.text,
            "total_lines": page.total_lines,
            "showing": f"lines {page.first_line}-{page.first_line + page.lines_returned} of {page.total_lines}"
            if page.lines_returned
            else f"no lines (of {page.total_lines})",
        }
        if page.dropped_chars:
            payload["note"] = f"{page.dropped_chars:,} earlier characters are no longer kept (rolling buffer)."
        return ToolResult(payload)

    async def _wait(self, record: ProcessRecord, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        # As Hermes Agent: a wait blocks at most the terminal's timeout (``terminal.timeout``), and says
        # so when it asked for more; without a timeout it waits that long.
        requested = args.get("timeout")
        positive = isinstance(requested, (int, float)) and not isinstance(requested, bool) and requested > 0
        if requested is not None and not positive:
            raise ToolError("'timeout' must be a positive number of seconds.")
        limit = self._terminal_timeout
        timeout = limit if requested is None else min(float(requested), limit)
        clamp_note = (
            f"The wait of {requested:g}s asked for was cut to {limit:g}s, the configured limit (terminal.timeout)."
            if requested is not None and requested > limit
            else None
        )
        finished = False
        record.exit_waiters += 1
        try:
            with trio.move_on_after(timeout):
                await record.wait_finished()
            finished = True
        finally:
            record.exit_waiters -= 1
            if not finished:
                # Cancelled from outside (interrupt): the partial result goes out as progress.
                interrupted = {
                    "session_id": record.process_id,
                    "status": "interrupted",
                    "note": "The wait was interrupted; the process keeps running.",
                }
                ctx.emit(ToolResult(interrupted).render())
        payload: dict[str, Any] = {"session_id": record.process_id}
        if record.finished.is_set():
            record.exit_seen = True
            payload.update(status="exited", exit_code=record.exit_code, process_status=record.status.value)
            payload["output"] = record.output.tail(self._background.notify_tail_chars)
        else:
            payload.update(status="timeout", output=record.output.tail(self._background.poll_tail_chars))
            clamp_note = clamp_note or f"Waited {timeout:g}s; the process is still running."
        if clamp_note:
            payload["timeout_note"] = clamp_note
        return ToolResult(payload)

    def _close(self, record: ProcessRecord) -> ToolResult:
        # Hermes's answers: ok with what was done, or why there was nothing to close.
        if record.close_stdin():
            message = "end of file sent (Ctrl-D on its terminal)" if record.spec.pty else "stdin closed"
            return ToolResult({"session_id": record.process_id, "status": "ok", "message": message})
        if record.finished.is_set():
            raise ToolError("The process has already finished.", session_id=record.process_id, status="already_exited")
        raise ToolError("Its stdin is already closed.", session_id=record.process_id, status="error")

    async def _kill(self, record: ProcessRecord) -> ToolResult:
        if not record.kill():
            return ToolResult({"session_id": record.process_id, "status": "already_exited", "exit_code": record.exit_code})
        # The actor escalates to SIGKILL after the grace; give it that long plus a margin.
        with trio.move_on_after(self._kill_grace + 5.0):
            await record.wait_finished()
        status = "killed" if record.status is ProcessStatus.KILLED else record.status.value
        return ToolResult({"session_id": record.process_id, "status": status, "exit_code": record.exit_code})

    async def _write(self, record: ProcessRecord, args: dict[str, Any], *, newline: bool) -> ToolResult:
        data = args.get("data", "")
        if not isinstance(data, str) or (not data and not newline):
            raise ToolError("'data' must be a non-empty string for write.")
        text = data + "\n" if newline else data
        try:
            with trio.move_on_after(self._background.write_patience_seconds) as scope:
                await record.write(text)
        except StdinUnavailable as exc:
            raise ToolError(str(exc), session_id=record.process_id, status=record.status.value) from None
        if scope.cancelled_caught:
            raise ToolError(
                "The process is not reading its input (stdin is full); check its output with action='log'.",
                session_id=record.process_id,
                status=record.status.value,
            )
        return ToolResult({"session_id": record.process_id, "status": "ok", "bytes_written": len(text.encode())})
