"""The sandbox in the actor tree: ``…/tool:<id>/sandbox`` with ``rpc:<n>`` jobs, cancelled like any member."""

from __future__ import annotations

import os
from typing import Any

import trio

from actors import Actor
from actors.sandbox.jobs import SandboxJob
from actors.sandbox.result import SandboxResult, SandboxStatus
from config.sandbox import CodeExecutionConfig
from messages.supervision import ActorState
from supervisor import ChildSpec, RestartType
from tests.sandbox.helpers import ToolBench, pid_running
from tools.results import ToolReply

CONFIG = CodeExecutionConfig(timeout=20, kill_grace_seconds=0.5, progress_interval_seconds=60)


class ToolWorkerStandIn(Actor[Any]):
    """Plays the session's tool worker: runs execute_code as its job and keeps the value it got back."""

    kind = "tool"

    def __init__(self, code: str, bench: ToolBench, base_dir: str, **options: Any) -> None:
        super().__init__()
        self.sandbox = SandboxJob(
            code, call_tool=options.pop("call_tool", bench.call_tool), allowed_tools=bench.enabled, config=CONFIG, gate=bench.gate,
            base_dir=base_dir, jail=bench.ctx.jail, **options,
        )  # fmt: skip
        self.result: SandboxResult | None = None

    async def main(self) -> None:
        self.state = ActorState.BUSY
        self.result = await self.run_job(self.sandbox, "sandbox")


async def _start(system: Any, worker: ToolWorkerStandIn) -> Any:
    return await system.root.start_child(ChildSpec("tool:call_1", lambda: worker, restart=RestartType.TEMPORARY))


async def _wait_for_a_running_call(bench: ToolBench, worker: ToolWorkerStandIn) -> None:
    """Until the script's first call runs; a child that never gets there fails the test, not hangs it."""
    with trio.fail_after(20):
        while bench.running.current == 0:
            assert worker.result is None, f"the run ended before any call: {worker.result}"
            await trio.sleep(0.01)


async def _start_stuck_script(system: Any, bench: ToolBench, short_dir: str) -> tuple[ToolWorkerStandIn, Any]:
    """A worker whose script printed "started" and now waits on a tool call that never answers."""
    bench.delay = 60
    worker = ToolWorkerStandIn(
        "from hermes_tools import read_file\nprint('started', flush=True)\nread_file('never.txt')", bench, short_dir
    )
    handle = await _start(system, worker)
    await _wait_for_a_running_call(bench, worker)
    return worker, handle


class TestSandboxJob:
    """The run shows up in the tree while it works, and an interrupt stops it with its partial output."""

    async def test_tree_while_running(self, system, bench: ToolBench, short_dir: str) -> None:
        bench.delay = 1.0
        worker = ToolWorkerStandIn(
            "from hermes_tools import read_file, web_search\nprint(web_search('q')['data'][:3])\n"
            "print(read_file('slow.txt')['path'])",
            bench, short_dir,
        )  # fmt: skip
        handle = await _start(system, worker)
        await _wait_for_a_running_call(bench, worker)
        node = system.tree("tool:call_1/sandbox")
        assert node.snapshot.kind == "sandbox"
        details = node.snapshot.details
        assert details["tool_calls"] == 2 and details["in_flight"] == 1 and pid_running(details["pid"])
        assert node.snapshot.activity == "execute_code: 1 tool call, 0 s"
        [rpc] = node.children
        assert rpc.snapshot.path == "tool:call_1/sandbox/rpc:2" and rpc.snapshot.details["tool"] == "read_file"
        await handle.wait_stopped()
        assert worker.result is not None and worker.result.output == "xxx\nslow.txt\n"
        assert system.registry.paths() == [""]

    async def test_cancel_from_above_stops_the_script(self, system, bench: ToolBench, short_dir: str) -> None:
        """Stopping the worker cancels the job from above: the script and its calls stop, its
        workspace goes, and no value comes back (only an interrupt returns the output so far)."""
        worker, handle = await _start_stuck_script(system, bench, short_dir)
        pid = system.tree("tool:call_1/sandbox").snapshot.details["pid"]
        handle.stop("interrupt", requested_by="user")
        with trio.fail_after(10):
            await handle.wait_stopped()
        assert worker.result is None
        assert bench.running.current == 0 and not pid_running(pid)
        assert os.listdir(short_dir) == [] and system.registry.paths() == [""]

    async def test_tool_failure_in_rpc_child_does_not_fail_the_sandbox(
        self, system, bench: ToolBench, short_dir: str
    ) -> None:
        async def broken(name: str, args: dict[str, Any]) -> ToolReply:
            raise OSError("socket exploded")

        worker = ToolWorkerStandIn(
            "from hermes_tools import terminal\nprint(terminal('x'))\nprint('after')", bench, short_dir, call_tool=broken
        )
        handle = await _start(system, worker)
        await handle.wait_stopped()
        assert worker.result is not None and worker.result.status is SandboxStatus.SUCCESS
        assert worker.result.output == "{'error': \"Tool 'terminal' failed: OSError: socket exploded\"}\nafter\n"

    async def test_kill_of_the_sandbox_job_returns_the_output_so_far(self, system, bench: ToolBench, short_dir: str) -> None:
        """Killing ``…/sandbox`` by path stops the script; the job returns the interrupted result to
        its caller, which lives on to finish."""
        worker, handle = await _start_stuck_script(system, bench, short_dir)
        system.lookup("tool:call_1/sandbox").stop("enough", requested_by="operator")
        with trio.fail_after(10):
            await handle.wait_stopped()
        assert worker.result is not None and worker.result.status is SandboxStatus.INTERRUPTED
        assert worker.result.output == "started\n[execution interrupted — user sent a new message]"
        assert worker.state is ActorState.STOPPED and bench.running.current == 0

    async def test_kill_of_one_rpc_call_answers_the_script(self, system, bench: ToolBench, short_dir: str) -> None:
        """Killing one ``rpc:<n>`` job answers that call with an error the script can read; the run goes on."""
        bench.delay = 60
        worker = ToolWorkerStandIn(
            "from hermes_tools import read_file\nprint(read_file('never.txt'))\nprint('after')", bench, short_dir
        )
        handle = await _start(system, worker)
        await _wait_for_a_running_call(bench, worker)
        system.lookup("tool:call_1/sandbox/rpc:1").stop("stuck", requested_by="operator")
        with trio.fail_after(10):
            await handle.wait_stopped()
        assert worker.result is not None and worker.result.status is SandboxStatus.SUCCESS
        first, after = worker.result.output.splitlines()
        assert first.startswith("{'error': \"Tool 'read_file' failed: RpcCallStopped: tool call read_file was stopped")
        assert "stuck (requested by operator)" in first and after == "after"
