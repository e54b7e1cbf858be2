"""The sandbox as jobs: ``…/tool:<id>/sandbox`` running one script, ``rpc:<n>`` under it per tool call.

A tool call runs the sandbox as a job of its own worker and gets the run's result back::

    job = SandboxJob(code, call_tool=..., allowed_tools=..., config=...)
    result = await worker.run_job(job, "sandbox")

Interrupted (killed by path, or with the tool call: the turn's interrupt, a budget), the script's
process group is stopped and the job returns the ``interrupted`` result: the output so far. A
cancellation from above stops the script the same way, and returns nothing.
"""

from __future__ import annotations

import json
from typing import Any

import outcome

from actors import Job, JobStopped
from actors.sandbox.errors import RpcCallStopped
from actors.sandbox.result import SandboxResult
from actors.sandbox.runner import Sandbox
from actors.sandbox.server import CallTool
from tools.results import ToolReply

__all__ = ["RpcCallJob", "SandboxJob"]


class RpcCallJob(Job[outcome.Outcome[ToolReply]]):
    """One tool call a script made, run through the session's tool path; visible as ``rpc:<n>``.

    A tool that raises is the call's answer, not the job's failure (which would fail the sandbox):
    the job returns the exception as an :class:`outcome.Error`, and the RPC server answers the
    script with it.
    """

    kind = "rpc"

    def __init__(self, tool: str, args: dict[str, Any], call_tool: CallTool) -> None:
        super().__init__()
        self.tool = tool
        self.args = args
        self._call_tool = call_tool

    def snapshot_details(self) -> dict[str, Any]:
        """The tool and the size of its arguments."""
        return {"tool": self.tool, "args_bytes": len(json.dumps(self.args, ensure_ascii=False))}

    async def execute(self) -> outcome.Outcome[ToolReply]:
        """Run the call once."""
        self.activity = self.tool
        try:
            return outcome.Value(await self._call_tool(self.tool, self.args))
        except Exception as exc:
            return outcome.Error(exc)


class SandboxJob(Job[SandboxResult]):
    """Runs one :class:`Sandbox` and returns its result; its snapshot shows tool calls so far, elapsed
    time and the child's pid.

    Args:
        code: The script.
        call_tool: The session's tool-execution path; each call runs in an ``rpc:<n>`` job.
        **options: The other :class:`Sandbox` arguments (allowed_tools, config, gate, ...).
    """

    kind = "sandbox"

    def __init__(
        self,
        code: str,
        *,
        call_tool: CallTool,
        **options: Any,
    ) -> None:
        super().__init__()
        self._call_tool = call_tool
        self._calls_started = 0
        # Invariant: the run's result holding the output so far, once the run was cancelled.
        self._partial: SandboxResult | None = None
        on_progress = options.pop("on_progress", None)

        def progress(text: str) -> None:
            self.activity = text
            if on_progress is not None:
                on_progress(text)

        def keep_partial(result: SandboxResult) -> None:
            self._partial = result

        self.sandbox = Sandbox(
            code, call_tool=self._call_in_job, on_progress=progress, on_interrupted=keep_partial, **options
        )

    def snapshot_details(self) -> dict[str, Any]:
        """Live state of the run for ``hermes-actors tree`` / ``inspect``."""
        stats = self.sandbox.statistics()
        return {
            "sandbox_state": stats.state.value,
            "pid": stats.pid,
            "tool_calls": stats.tool_calls,
            "in_flight": stats.in_flight,
            "elapsed_seconds": round(stats.elapsed_seconds, 1),
            "stdout_bytes": stats.stdout_bytes,
        }

    async def execute(self) -> SandboxResult:
        """Run the script to its end or its timeout."""
        self.activity = "execute_code: starting"
        return await self.sandbox.run()

    async def interrupted(self) -> SandboxResult:
        """The ``interrupted`` result, the output so far.

        Raises:
            JobStopped: killed before the script started (there is no output).
        """
        if self._partial is None:
            return await super().interrupted()
        return self._partial

    async def _call_in_job(self, tool: str, args: dict[str, Any]) -> ToolReply:
        """Run one call as an ``rpc:<n>`` job, in the RPC server's task, so its per-call timeout reaches it.

        Raises:
            RpcCallStopped: the call was killed by path before it answered.
            Exception: whatever the tool raised.
        """
        self._calls_started += 1
        try:
            answer = await self.run_job(RpcCallJob(tool, args, self._call_tool), f"rpc:{self._calls_started}")
        except JobStopped as exc:
            raise RpcCallStopped(f"tool call {tool} was stopped: {exc}") from None
        return answer.unwrap()
