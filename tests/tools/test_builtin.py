"""The core tools wired into a registry and run through dispatch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio

from tools.background import BackgroundSpec
from tools.builtin import CORE_TOOL_NAMES, register_core_tools
from tools.context import ApprovalAnswer, ApprovalRequest, ToolContext
from tools.dispatch import dispatch
from tools.errors import CapabilityUnavailable, ClarifyUnavailable
from tools.parallel import can_run_in_parallel
from tools.registry import ToolRegistry
from tools.testing import LocalToolContext
from tools.toolsets import ToolsetCatalog


@pytest.fixture
def registry() -> ToolRegistry:
    registry = ToolRegistry()
    register_core_tools(registry)
    return registry


class TestRegisterCoreTools:
    """All core tools are registered with their safety flags and appear in the CLI toolset."""

    def test_names_and_definitions(self, registry: ToolRegistry) -> None:
        assert CORE_TOOL_NAMES == set(registry.names())
        visible = ToolsetCatalog(registry).select_tools(["hermes-cli"])
        assert CORE_TOOL_NAMES <= visible
        assert sorted(CORE_TOOL_NAMES) == [d["function"]["name"] for d in registry.get_definitions(visible)]

    def test_parallel_rules(self, registry: ToolRegistry) -> None:
        cwd = "/w"
        assert can_run_in_parallel([("read_file", {"path": "a"}), ("patch", {"path": "b"}), ("search_files", {"pattern": "x"})], registry, cwd)
        assert not can_run_in_parallel([("read_file", {"path": "a"}), ("memory", {"action": "read"})], registry, cwd)
        assert not can_run_in_parallel([("read_file", {"path": "a"}), ("clarify", {"question": "?"})], registry, cwd)


class TestEndToEnd:
    """A write, a patch, a read and a search through the one dispatch path."""

    async def test_file_round_trip(self, registry: ToolRegistry, tmp_path: Path) -> None:
        ctx = LocalToolContext(home=tmp_path / "home", cwd=tmp_path)
        await dispatch(registry, "write_file", {"path": "pkg/mod.py", "content": "VALUE = 1\n"}, ctx)
        patched = json.loads((await dispatch(registry, "patch", {"mode": "replace", "path": "pkg/mod.py", "old_string": "1", "new_string": "2"}, ctx)).text)
        assert "+VALUE = 2" in patched["diff"]
        read = json.loads((await dispatch(registry, "read_file", {"path": "pkg/mod.py"}, ctx)).text)
        assert "1|VALUE = 2" == read["content"]
        found = json.loads((await dispatch(registry, "search_files", {"pattern": "VALUE", "path": "pkg"}, ctx)).text)
        assert [{"path": "pkg/mod.py", "line": 1, "content": "VALUE = 2"}] == found["matches"]

    async def test_schema_error_reaches_model(self, registry: ToolRegistry, tmp_path: Path) -> None:
        ctx = LocalToolContext(home=tmp_path / "home", cwd=tmp_path)
        result = json.loads((await dispatch(registry, "read_file", {"path": "x", "limit": 9999}, ctx)).text)
        assert "'limit' must be <= 2000" in result["error"]
        result = json.loads((await dispatch(registry, "todo", {"todos": [{"id": "1", "content": "x"}]}, ctx)).text)
        assert "'todos[0].status' is required" in result["error"]


class TestLocalToolContext:
    """The standalone context answers approvals and questions through callables and runs background processes."""

    async def test_approvals(self, tmp_path: Path) -> None:
        request = ApprovalRequest(command="rm -rf build", description="recursive delete", tool="terminal")
        assert "deny" == (await LocalToolContext(home=tmp_path).approve(request)).decision
        ctx = LocalToolContext(home=tmp_path, approver=lambda r: "session")
        assert ApprovalAnswer("session", "the user") == await ctx.approve(request)
        assert [request] == ctx.approvals
        refused = await LocalToolContext(home=tmp_path, approver=lambda r: "once", interactive=False).approve(request)
        assert "deny" == refused.decision

    async def test_clarify_and_capabilities(self, tmp_path: Path) -> None:
        with pytest.raises(ClarifyUnavailable):
            await LocalToolContext(home=tmp_path).clarify("q", [], True)
        ctx: ToolContext = LocalToolContext(home=tmp_path)
        with pytest.raises(CapabilityUnavailable):
            await ctx.delegate({"goal": "x"})
        with pytest.raises(CapabilityUnavailable):
            await ctx.run_sandbox("print(1)")
        with pytest.raises(CapabilityUnavailable):
            await ctx.start_background(BackgroundSpec(command="true", cwd=str(tmp_path)))

    async def test_emit_collects(self, tmp_path: Path) -> None:
        ctx = LocalToolContext(home=tmp_path)
        ctx.emit("step 1")
        ctx.emit("step 2")
        assert ["step 1", "step 2"] == ctx.progress

    async def test_background_process_runs_in_nursery(self, tmp_path: Path) -> None:
        async with trio.open_nursery() as nursery:
            ctx = LocalToolContext(home=tmp_path, cwd=tmp_path, nursery=nursery)
            info = await ctx.start_background(
                BackgroundSpec(command="echo hello-bg", cwd=str(tmp_path), notify_on_complete=True, kill_grace_seconds=0.5)
            )
            assert info.process_id.startswith("proc_")
            with trio.fail_after(10):
                await ctx.processes.get(info.process_id).wait_finished()
        assert 1 == len(ctx.notifications)
        assert "completed" == ctx.notifications[0].kind
        assert "hello-bg" in ctx.notifications[0].output
        assert 0 == ctx.notifications[0].exit_code
