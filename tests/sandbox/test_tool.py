"""The execute_code tool: registered in the code_execution toolset and dispatched like any tool."""

from __future__ import annotations

import ast
import json
import os
from typing import Any

import attrs
import pytest

from actors.sandbox import Sandbox, execute_code_schema, generate_stub_module, register_execute_code, sandbox_tools
from config.sandbox import CodeExecutionConfig
from tests.jail.fixtures import Jails
from tests.sandbox.helpers import ToolBench
from tests.tools.helpers import echo_handler, schema
from tools.dispatch import dispatch
from tools.registry import ToolRegistry
from tools.results import ToolResult
from tools.testing import LocalToolContext


@attrs.define(kw_only=True)
class SandboxContext(LocalToolContext):
    """A LocalToolContext whose run_sandbox runs a real Sandbox over the bench's tools."""

    bench: ToolBench | None = None
    base_dir: str = "/tmp"
    sandboxes: list[Sandbox] = attrs.field(factory=list)

    async def run_sandbox(self, code: str) -> ToolResult:
        assert self.bench is not None
        sandbox = Sandbox(
            code, call_tool=self.bench.call_tool, allowed_tools=self.bench.enabled, config=CodeExecutionConfig(),
            on_progress=self.emit, gate=self.bench.gate, cwd=lambda: self.shell.cwd, base_dir=self.base_dir,
            jail=self.jail,
        )  # fmt: skip
        self.sandboxes.append(sandbox)
        return (await sandbox.run()).tool_result()


class TestExecuteCodeTool:
    """Dispatching execute_code reaches the session's sandbox; bad input is a model-actionable error."""

    async def test_dispatch_runs_the_script(self, tmp_path, short_dir: str, jails: Jails) -> None:
        home = tmp_path / "home"
        ctx = SandboxContext(home=home, cwd=tmp_path, base_dir=short_dir, jail=jails.jail(tmp_path, home=home))
        ctx.bench = bench = ToolBench(ctx, delay=0)
        assert register_execute_code(bench.registry, CodeExecutionConfig())
        reply = await dispatch(
            bench.registry, "execute_code", {"code": "from hermes_tools import read_file\nprint(read_file('a')['path'])"},
            ctx,
        )  # fmt: skip
        result = json.loads(reply.text)
        assert reply.ok
        assert result["status"] == "success" and result["output"] == "a\n" and result["tool_calls_made"] == 1
        assert ctx.progress == ["execute_code: 1 tool call, 0 s"]
        assert os.listdir(short_dir) == []

    async def test_the_script_runs_in_a_temporary_directory(self, tmp_path, short_dir: str, jails: Jails) -> None:
        """Seed 000 (and Hermes's code_execution.mode 'strict'): not the session's directory, removed after."""
        home = tmp_path / "home"
        ctx = SandboxContext(home=home, cwd=tmp_path, base_dir=short_dir, jail=jails.jail(tmp_path, home=home))
        ctx.bench = bench = ToolBench(ctx, delay=0)
        register_execute_code(bench.registry, CodeExecutionConfig())
        code = "import os\nprint(os.getcwd())\nprint(os.listdir('.'))"
        result = json.loads((await dispatch(bench.registry, "execute_code", {"code": code}, ctx)).text)
        where, listing = result["output"].splitlines()
        assert where != str(tmp_path) and os.path.realpath(where).startswith(os.path.realpath(short_dir))
        assert "home" not in listing
        assert os.listdir(short_dir) == []
        assert "temporary" in execute_code_schema(CodeExecutionConfig(), frozenset())["description"]

    async def test_empty_and_missing_code(self, tmp_path) -> None:
        ctx = SandboxContext(home=tmp_path)
        ctx.bench = bench = ToolBench(ctx)
        register_execute_code(bench.registry, CodeExecutionConfig())
        empty = await dispatch(bench.registry, "execute_code", {"code": "  "}, ctx)
        assert (json.loads(empty.text), empty.ok) == ({"error": "No code provided."}, False)
        missing = json.loads((await dispatch(bench.registry, "execute_code", {}, ctx)).text)
        assert "code" in missing["error"]
        assert ctx.sandboxes == []

    async def test_context_without_sandbox(self, tmp_path) -> None:
        ctx = LocalToolContext(home=tmp_path)
        bench = ToolBench(ctx)
        register_execute_code(bench.registry, CodeExecutionConfig())
        reply = await dispatch(bench.registry, "execute_code", {"code": "print(1)"}, ctx)
        assert "not available" in json.loads(reply.text)["error"] and not reply.ok

    def test_schema_states_limits(self) -> None:
        tool: dict[str, Any] = execute_code_schema(CodeExecutionConfig(timeout=120, max_tool_calls=20), frozenset())
        assert tool["parameters"]["required"] == ["code"]
        assert "120 s, 20 tool calls" in tool["description"]
        assert "hermes_tools" in tool["description"]
        assert "Functions: none." in tool["description"]


def _described_functions(description: str) -> list[str]:
    """The function names the description lists after "Functions:"."""
    listing = description.split("Functions: ", 1)[1].split(".", 1)[0]
    return [] if listing == "none" else listing.split(", ")


def _stub_functions(source: str) -> list[str]:
    """The tool functions a generated stub defines (its helpers left out)."""
    tree = ast.parse(source)
    helpers = {"json_parse", "shell_quote", "retry"}
    return sorted(n.name for n in tree.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_") and n.name not in helpers)


class TestDescriptionMatchesStub:
    """The execute_code description a session sees names exactly the functions its script's stub defines."""

    def _registry(self) -> ToolRegistry:
        registry = ToolRegistry()
        for name in ("read_file", "terminal", "todo", "memory"):
            registry.register(name, "t", schema(), echo_handler)
        # Configured but unavailable right now: hidden from the session, so not in its stub either.
        registry.register("web_search", "t", schema(), echo_handler, check_fn=lambda: False)
        register_execute_code(registry, CodeExecutionConfig())
        return registry

    @pytest.mark.parametrize(
        "enabled",
        [
            {"read_file", "terminal", "todo", "memory", "web_search", "execute_code"},
            {"read_file", "execute_code"},
            {"todo", "execute_code"},
        ],
    )
    def test_same_functions(self, enabled: set[str]) -> None:
        registry = self._registry()
        definitions = registry.get_definitions(enabled)
        offered = frozenset(d["function"]["name"] for d in definitions)
        [described] = [d["function"]["description"] for d in definitions if d["function"]["name"] == "execute_code"]
        # The session's sandbox gets the offered names as its allowed tools (actors/session/sandboxing.py).
        stub = generate_stub_module(sandbox_tools(offered))
        assert _described_functions(described) == _stub_functions(stub)
        assert "browser_" not in described

    def test_names_the_tools_of_a_rich_session(self) -> None:
        definitions = self._registry().get_definitions({"read_file", "terminal", "todo", "web_search", "execute_code"})
        [described] = [d["function"]["description"] for d in definitions if d["function"]["name"] == "execute_code"]
        assert _described_functions(described) == ["read_file", "terminal"]
        assert "terminal() runs in the foreground only." in described


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
        assert result.error == "execute_code is not available on Windows. Use normal tool calls instead."
