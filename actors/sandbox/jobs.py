"""The sandbox as a job: ``…/tool:<id>/sandbox`` running one script, its RPC server ``rpc`` under it, and
under that a ``call:<n>`` job per tool call the script makes.

A tool call runs the sandbox as a job of its own worker and gets the run's result back::

    job = SandboxJob(code, call_tool=..., allowed_tools=..., config=...)
    result = await worker.run_job(job, "sandbox")

Interrupted (killed by path, or with the tool call: the turn's interrupt, a budget), the script's
process group is stopped and the job returns the ``interrupted`` result: the output so far. A
cancellation from above stops the script the same way, and returns nothing.
"""

from __future__ import annotations

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
        **options: The other :class:`Sandbox` arguments (allowed_tools, config, gate, ...).
    """

    kind = "sandbox"

    def __init__(self, code: str, *, call_tool: CallTool, **options: Any) -> None:
        super().__init__()
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
            code, call_tool=call_tool, on_progress=progress, on_interrupted=keep_partial, owner=self, **options
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
