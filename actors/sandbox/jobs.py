"""The sandbox as a job: ``…/tool:<id>/sandbox`` running one script, its RPC server ``rpc`` under it, and
under that a ``call:<n>`` job per tool call the script makes.

A tool call runs the sandbox as a job of its own worker and gets the run's result back::

    interrupted: list[SandboxResult] = []
    job = SandboxJob(code, call_tool=..., on_interrupted=interrupted.append, allowed_tools=..., config=...)
    try:
        result = await worker.run_job(job, "sandbox")
    except JobStopped:
        result = interrupted[-1]  # killed by path: the output so far is the call's result

The worker's cancel scope (interrupt, budget, kill) reaches the job like any child: the script's
process group is stopped and ``on_interrupted`` receives the output so far before ``Cancelled``
propagates; the caller owns what it keeps of it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from actors import Job
from actors.sandbox.calls import CallTool
from actors.sandbox.result import SandboxResult
from actors.sandbox.runner import Sandbox

__all__ = ["SandboxJob"]


class SandboxJob(Job[SandboxResult]):
    """Runs one :class:`Sandbox` and returns its result; its snapshot shows tool calls so far, elapsed
    time and the child's pid.

    Args:
        code: The script.
        call_tool: The session's tool-execution path; each call runs in a ``call:<n>`` job of the server.
        on_interrupted: Receives the result holding the output so far when the run is cancelled
            (interrupt, budget, kill), before the cancellation propagates.
        **options: The other :class:`Sandbox` arguments (allowed_tools, config, gate, ...).
    """

    kind = "sandbox"

    def __init__(
        self,
        code: str,
        *,
        call_tool: CallTool,
        on_interrupted: Callable[[SandboxResult], None] = lambda result: None,
        **options: Any,
    ) -> None:
        super().__init__()
        on_progress = options.pop("on_progress", None)

        def progress(text: str) -> None:
            self.activity = text
            if on_progress is not None:
                on_progress(text)

        self.sandbox = Sandbox(
            code, call_tool=call_tool, on_progress=progress, on_interrupted=on_interrupted, owner=self, **options
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
