"""The terminal tools through the real registry and dispatch path."""

from __future__ import annotations

from tests.jail.fixtures import Jails

import json
from pathlib import Path

from config.terminal import TerminalConfig
from tests.terminal.helpers import FAST, make_ctx
from tools.dispatch import dispatch
from tools.registry import ToolRegistry
from tools.terminal import register_terminal_tools


class TestRegistration:
    """terminal and process are registered in toolset terminal, sequential, and callable via dispatch."""

    async def test_definitions(self) -> None:
        registry = ToolRegistry()
        register_terminal_tools(registry, TerminalConfig())
        definitions = registry.get_definitions({"terminal", "process"})
        assert [d["function"]["name"] for d in definitions] == ["process", "terminal"]
        assert registry.get("terminal").toolset == "terminal"
        assert not registry.get("terminal").parallel_safe
        params = definitions[1]["function"]["parameters"]
        assert params["required"] == ["command"]
        assert set(params["properties"]) == {"command", "timeout", "workdir", "background", "pty", "notify_on_complete", "watch_patterns"}

    async def test_dispatch_runs_and_validates(self, jails: Jails, tmp_path: Path) -> None:
        registry = ToolRegistry()
        tools = register_terminal_tools(registry, FAST)
        ctx = make_ctx(jails, tmp_path)
        result = json.loads((await dispatch(registry, "terminal", {"command": "echo via dispatch"}, ctx)).text)
        assert result["output"] == "via dispatch"
        missing = json.loads((await dispatch(registry, "terminal", {}, ctx)).text)
        assert "command" in missing["error"]
        assert tools.approvals.for_session(ctx.session_id).snapshot() == []

    async def test_process_without_table(self, jails: Jails, tmp_path: Path) -> None:
        registry = ToolRegistry()
        register_terminal_tools(registry, FAST)
        ctx = make_ctx(jails, tmp_path)
        ctx.processes = None
        result = json.loads((await dispatch(registry, "process", {"action": "list"}, ctx)).text)
        assert "not available" in result["error"]


class TestReplyOk:
    """Through dispatch, a terminal call's reply says whether it failed; the text keeps the shell's fields."""

    async def test_command_that_ran_is_ok_whatever_its_exit_code(self, jails: Jails, tmp_path: Path) -> None:
        registry = ToolRegistry()
        register_terminal_tools(registry, FAST)
        reply = await dispatch(registry, "terminal", {"command": "exit 3"}, make_ctx(jails, tmp_path))
        assert reply.ok and json.loads(reply.text)["exit_code"] == 3

    async def test_command_that_could_not_start_is_a_failure(self, jails: Jails, tmp_path: Path) -> None:
        registry = ToolRegistry()
        register_terminal_tools(registry, TerminalConfig(shell="/nonexistent/shell"))
        reply = await dispatch(registry, "terminal", {"command": "true"}, make_ctx(jails, tmp_path))
        result = json.loads(reply.text)
        assert not reply.ok and "/nonexistent/shell" in (reply.error or "")
        assert (result["error"], result["output"], result["exit_code"]) == (reply.error, "", 127)
