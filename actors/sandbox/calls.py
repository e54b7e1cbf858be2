"""One tool call a script made, as a job of the RPC server: ``…/sandbox/rpc/call:<n>``."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import outcome

from actors import Job
from tools.results import ToolReply

__all__ = ["AnswerRejected", "AnsweredAgain", "CallTool", "RepeatRejected", "RpcCallJob"]

CallTool = Callable[[str, dict[str, Any]], Awaitable[ToolReply]]
"""The session's tool-execution path: a tool name and its arguments to the call's reply."""
AnswerRejected = Callable[[str, dict[str, Any]], Awaitable["ToolReply | None"]]
"""The session's answer to a call its tool rejects before running anything (arguments that fail the tool's
checks), given and recorded as :data:`CallTool` would; None when the call must run. It waits for nothing
but, rarely, redacting a long failure."""


class AnsweredAgain(Protocol):
    """The session's answers to a call it answered at once (:data:`AnswerRejected`) made again unchanged, with
    nothing else called in between: told by a thread, counted and recorded after, in order, on the event loop."""

    @property
    def error(self) -> str | None:
        """Why each such call failed."""

    def text(self, repeat: int) -> str | None:
        """The answer's text to the ``repeat``-th call made again (1: the next one), from any thread; None when
        the call must be answered by :data:`AnswerRejected` on the event loop."""

    def record(self, text: str, duration: float) -> None:
        """Count and record, on the event loop, one call answered with ``text`` that took ``duration`` seconds."""


RepeatRejected = Callable[[str, dict[str, Any]], "AnsweredAgain | None"]
"""The session's :class:`AnsweredAgain` for a call it has just answered at once; None when it has none."""


class RpcCallJob(Job[outcome.Outcome[ToolReply]]):
    """One tool call a script made, run through the session's tool path; visible as ``call:<n>``.

    A tool that raises is the call's answer, not the job's failure (which would fail the server):
    the job returns the exception as an :class:`outcome.Error`, and the RPC server answers the
    script with it.

    Args:
        tool: The tool's name.
        args: Its arguments.
        call_tool: The session's tool path.
    """

    kind = "rpc"

    def __init__(self, tool: str, args: dict[str, Any], call_tool: CallTool) -> None:
        super().__init__()
        self.tool = tool
        self.args = args
        self._call_tool = call_tool
        self.activity = tool

    def snapshot_details(self) -> dict[str, Any]:
        """The tool and the size of its arguments."""
        return {"tool": self.tool, "args_bytes": len(json.dumps(self.args, ensure_ascii=False))}

    async def execute(self) -> outcome.Outcome[ToolReply]:
        """Run the call once."""
        try:
            return outcome.Value(await self._call_tool(self.tool, self.args))
        except Exception as exc:
            return outcome.Error(exc)
