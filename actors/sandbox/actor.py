"""The sandbox as actors: ``…/tool:<id>/sandbox`` running one script, ``rpc:<n>`` children per tool call.

A tool worker starts it through its own ``spawn`` (``CallContext.spawn``)::

    actor = SandboxActor(code, call_tool=..., allowed_tools=..., config=...)
    try:
        text = (await actor.run_under(ctx.spawn)).to_json()
    finally:
        partial = actor.result  # status "interrupted" with the output so far when the turn was cancelled

The worker's cancel scope (interrupt, budget, kill) reaches the sandbox actor like any child: the
child's process group is stopped and :attr:`SandboxActor.result` keeps what the script printed.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from actors.base import Actor
from actors.handle import ActorHandle
from actors.sandbox.result import SandboxResult
from actors.sandbox.runner import Sandbox
from messages.supervision import ActorState

CallTool = Callable[[str, dict[str, Any]], Awaitable[str]]
SpawnFn = Callable[[Actor[Any], str], Awaitable[ActorHandle[Any]]]


class RpcCallActor(Actor[Any]):
    """One tool call a script made, run through the session's tool path; visible as ``rpc:<n>``.

    Its failure never escapes the actor (that would fail the sandbox): it is kept in :attr:`error`
    and re-raised to the RPC server, which answers the script with it.
    """

    kind = "rpc"
    mailbox_capacity = 1

    def __init__(self, tool: str, args: dict[str, Any], call_tool: CallTool) -> None:
        super().__init__()
        self.tool = tool
        self.args = args
        self._call_tool = call_tool
        self.result: str | None = None
        self.error: Exception | None = None

    def snapshot_details(self) -> dict[str, Any]:
        """The tool and the size of its arguments."""
        return {"tool": self.tool, "args_bytes": len(json.dumps(self.args, ensure_ascii=False))}

    async def main(self) -> None:
        """Run the call once."""
        self.state = ActorState.BUSY
        self.activity = self.tool
        try:
            self.result = await self._call_tool(self.tool, self.args)
        except Exception as exc:
            self.error = exc


class SandboxActor(Actor[Any]):
    """Runs one :class:`Sandbox`; its snapshot shows tool calls so far, elapsed time and the child's pid.

    Args:
        code: The script.
        call_tool: The session's tool-execution path; each call runs in an ``rpc:<n>`` child.
        **options: The other :class:`Sandbox` arguments (allowed_tools, config, gate, ...).
    """

    kind = "sandbox"
    mailbox_capacity = 1

    def __init__(self, code: str, *, call_tool: CallTool, **options: Any) -> None:
        super().__init__()
        self._call_tool = call_tool
        self._calls_started = 0
        on_progress = options.pop("on_progress", None)

        def progress(text: str) -> None:
            self.activity = text
            if on_progress is not None:
                on_progress(text)

        self.sandbox = Sandbox(code, call_tool=self._call_in_child, on_progress=progress, **options)

    @property
    def result(self) -> SandboxResult | None:
        """The run's outcome once over; an ``interrupted`` result after a cancellation."""
        return self.sandbox.result

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

    async def main(self) -> None:
        """Run the script to its end; the actor stops with it."""
        self.state = ActorState.RUNNING
        self.activity = "execute_code: starting"
        await self.sandbox.run()

    async def run_under(self, spawn: SpawnFn) -> SandboxResult:
        """Start this actor as ``sandbox`` with ``spawn`` (a parent's :meth:`Actor.spawn`) and wait for its result.

        Raises:
            Cancelled: the caller's scope was cancelled; :attr:`result` holds the interrupted result.
        """
        handle = await spawn(self, "sandbox")
        try:
            await handle.wait_stopped()
        except BaseException:
            # Wait for the child to be stopped so the interrupted result exists when the caller looks.
            handle.stop("execute_code was cancelled", requested_by=self.path.rsplit("/", 1)[0] or "caller")
            with trio.CancelScope(shield=True):
                await handle.wait_stopped()
            raise
        assert self.result is not None
        return self.result

    async def _call_in_child(self, tool: str, args: dict[str, Any]) -> str:
        self._calls_started += 1
        call = RpcCallActor(tool, args, self._call_tool)
        handle = await self.spawn(call, f"rpc:{self._calls_started}")
        try:
            await handle.wait_stopped()
        except BaseException:
            # Per-call timeout or the run ending: the call must not outlive its request.
            handle.stop("the sandbox stopped waiting for this call", requested_by=self.path)
            with trio.CancelScope(shield=True):
                await handle.wait_stopped()
            raise
        if call.error is not None:
            raise call.error
        if call.result is None:
            raise RuntimeError(f"tool call {tool} was stopped: {call.cancel_reason}")
        return call.result
