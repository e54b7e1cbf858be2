"""What one execute_code run produced: the result the model sees and the per-call transcript records."""

from __future__ import annotations

import enum
from typing import Any

import attrs

from tools.errors import ToolError
from tools.results import ToolResult

INTERRUPTED_NOTICE = "[execution interrupted — user sent a new message]"
STDERR_SEPARATOR = "--- stderr ---"


class SandboxStatus(enum.Enum):
    """How a run ended."""

    SUCCESS = "success"  # the script exited 0
    ERROR = "error"  # non-zero exit, a crash, or the sandbox could not start
    TIMEOUT = "timeout"  # killed after code_execution.timeout
    INTERRUPTED = "interrupted"  # the caller's scope was cancelled (interrupt, budget, kill)


@attrs.frozen
class SandboxToolCall:
    """One tool call a script made, for the session's transcript (never shown to the model).

    Attributes:
        tool: Tool name as the script asked for it.
        args_bytes: Size of the JSON arguments.
        duration_seconds: Time from the request's arrival to its response.
        ok: False when the call was refused, timed out or raised.
        error: The refusal or failure text, when not ok.
    """

    tool: str
    args_bytes: int
    duration_seconds: float
    ok: bool
    error: str | None = None

    def to_record(self) -> dict[str, Any]:
        """The transcript record of this call: its fields, in order (written out: ``attrs.asdict`` took 2 µs of
        the few tens a failing call costs, once for each of a script's calls)."""
        return {
            "kind": "sandbox_tool_call", "tool": self.tool, "args_bytes": self.args_bytes,
            "duration_seconds": self.duration_seconds, "ok": self.ok, "error": self.error,
        }


@attrs.frozen
class SandboxResult:
    """The outcome of one execute_code run.

    ``output`` is already assembled for the model (stdout, then stderr after a failure, then the
    timeout or interrupt notice) and redacted. ``error`` is set, and nothing else, when no script ran
    at all. ``unrecorded_calls`` counts the refused calls beyond those recorded for the transcript
    (``actors.sandbox.server.MAX_RECORDED_REFUSALS``); the model is not told.
    """

    status: SandboxStatus
    output: str = ""
    tool_calls_made: int = 0
    duration_seconds: float = 0.0
    exit_code: int | None = None
    stdout_truncated: bool = False
    stdout_total_bytes: int = 0
    stderr_truncated: bool = False
    error: str | None = None
    unrecorded_calls: int = 0

    def tool_result(self) -> ToolResult:
        """The tool result handed back to the model.

        Raises:
            ToolError: no script ran (``error`` is set); the message says why.
        """
        if self.error is not None:
            raise ToolError(self.error)
        payload: dict[str, Any] = {
            "status": self.status.value,
            "output": self.output,
            "tool_calls_made": self.tool_calls_made,
            "duration_seconds": round(self.duration_seconds, 2),
            "exit_code": self.exit_code,
        }
        if self.stdout_truncated:
            payload["output_truncated"] = True
            payload["output_total_bytes"] = self.stdout_total_bytes
        if self.stderr_truncated:
            payload["stderr_truncated"] = True
        return ToolResult(payload)
