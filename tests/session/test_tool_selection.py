"""The tools a new session is offered: selected from its toolsets once per registry state, shared by sessions asking the same."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from actors.session.state import freeze_tools
from tests.session.harness import open_harness
from tools.toolsets import ToolsetCatalog


class TestToolSelection:
    """Sessions asking for the same toolsets share one selection until the registry changes."""

    async def test_selected_once_then_again_after_a_registration(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """Two sessions with the same toolsets resolve them once; a tool registered afterwards (the registry's
        generation moves on) is offered to the next session, which resolves them again."""
        selections: list[Any] = []
        select_tools = ToolsetCatalog.select_tools

        def counted(self: ToolsetCatalog, *args: Any, **kwargs: Any) -> frozenset[str]:
            selections.append(args)
            return select_tools(self, *args, **kwargs)

        monkeypatch.setattr(ToolsetCatalog, "select_tools", counted)
        async with open_harness(tmp_path) as h:
            options = h.options(toolsets=("hermes-api",))
            first = freeze_tools(h.deps, options)
            second = freeze_tools(h.deps, options)
            assert second is first and len(selections) == 1
            assert "late_tool" not in first.names
            schema = {"name": "late_tool", "description": "added late", "parameters": {"type": "object", "properties": {}}}
            h.deps.registry.register("late_tool", "hermes-api", schema, lambda args, ctx: "ok")
            third = freeze_tools(h.deps, options)
            assert "late_tool" in third.names and len(selections) == 2

    async def test_different_toolsets_are_selected_apart(self, tmp_path: Path) -> None:
        """A session blocked from a tool is not offered it, though another with the same toolsets was."""
        async with open_harness(tmp_path) as h:
            offered = freeze_tools(h.deps, h.options(toolsets=("hermes-api",))).names
            tool = sorted(offered)[0]
            blocked = freeze_tools(h.deps, h.options(toolsets=("hermes-api",), blocked_tools=frozenset({tool}))).names
            assert tool in offered and tool not in blocked
            assert offered - {tool} == blocked
