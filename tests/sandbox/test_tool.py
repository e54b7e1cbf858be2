"""The execute_code tool: registered in the code_execution toolset and dispatched like any tool."""

from __future__ import annotations

import json
import os
from typing import Any

import attrs

from actors.sandbox import Sandbox, execute_code_schema, register_execute_code
from config.sandbox import CodeExecutionConfig
from tests.jail.fixtures import Jails
from tests.sandbox.helpers import ToolBench
from tools.dispatch import dispatch
from tools.testing import LocalToolContext


@attrs.define(kw_only=True)
class SandboxContext(LocalToolContext):
    """A LocalToolContext whose run_sandbox runs a real Sandbox over the bench's tools."""

    bench: ToolBench | None = None
    base_dir: str = "/tmp"
    sandboxes: list[Sandbox] = attrs.field(factory=list)

    async def run_sandbox(self, code: str) -> str:
        assert self.bench is not None
        sandbox = Sandbox(
            code, call_tool=self.bench.call_tool, allowed_tools=self.bench.enabled, config=CodeExecutionConfig(),
            on_progress=self.emit, gate=self.bench.gate, cwd=lambda: self.shell.cwd, base_dir=self.base_dir,
            jail=self.jail,
        )  # fmt: skip
        self.sandboxes.append(sandbox)
        return (await sandbox.run()).to_json()


class TestExecuteCodeTool:
    """Dispatching execute_code reaches the session's sandbox; bad input is a model-actionable error."""

    async def test_dispatch_runs_the_script(self, tmp_path, short_dir: str, jails: Jails) -> None:
        home = tmp_path / "home"
        ctx = SandboxContext(home=home, cwd=tmp_path, base_dir=short_dir, jail=jails.jail(tmp_path, home=home))
        ctx.bench = bench = ToolBench(ctx, delay=0)
        assert register_execute_code(bench.registry, CodeExecutionConfig())
        text = await dispatch(
            bench.registry, "execute_code", {"code": "from hermes_tools import read_file\nprint(read_file('a')['path'])"},
            ctx,
        )  # fmt: skip
        result = json.loads(text)
        assert result["status"] == "success" and result["output"] == "a\n" and result["tool_calls_made"] == 1
        assert ctx.progress == ["execute_code: 1 tool call, 0 s"]
        assert os.listdir(short_dir) == []

    async def test_empty_and_missing_code(self, tmp_path) -> None:
        ctx = SandboxContext(home=tmp_path)
        ctx.bench = bench = ToolBench(ctx)
        register_execute_code(bench.registry, CodeExecutionConfig())
        assert json.loads(await dispatch(bench.registry, "execute_code", {"code": "  "}, ctx)) == {
            "error": "No code provided."
        }
        missing = json.loads(await dispatch(bench.registry, "execute_code", {}, ctx))
        assert "code" in missing["error"]
        assert ctx.sandboxes == []

    async def test_context_without_sandbox(self, tmp_path) -> None:
        ctx = LocalToolContext(home=tmp_path)
        bench = ToolBench(ctx)
        register_execute_code(bench.registry, CodeExecutionConfig())
        text = await dispatch(bench.registry, "execute_code", {"code": "print(1)"}, ctx)
        assert "not available" in json.loads(text)["error"]

    def test_schema_states_limits(self) -> None:
        schema: dict[str, Any] = execute_code_schema(CodeExecutionConfig(timeout=120, max_tool_calls=20))
        assert schema["parameters"]["required"] == ["code"]
        assert "120 s, 20 tool calls" in schema["description"]
        assert "hermes_tools" in schema["description"]


class TestWindows:
    """On Windows the tool is absent from the schema and a direct run says why."""

    async def test_absent(self, tmp_path, monkeypatch) -> None:
        bench = ToolBench(LocalToolContext(home=tmp_path))
        monkeypatch.setattr("sys.platform", "win32")
        assert register_execute_code(bench.registry, CodeExecutionConfig()) is False
        assert "execute_code" not in bench.registry
        result = await Sandbox(
            "print(1)", call_tool=bench.call_tool, allowed_tools=bench.enabled, config=CodeExecutionConfig(),
            jail=bench.ctx.jail,
        ).run()
        assert json.loads(result.to_json()) == {
            "error": "execute_code is not available on Windows. Use normal tool calls instead."
        }
