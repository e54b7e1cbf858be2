"""Tool results holding lone surrogates are repaired where every result is finalised (dispatch)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tools.context import ToolContext
from tools.dispatch import dispatch
from tools.registry import ToolRegistry
from tools.results import ToolResult
from tools.testing import LocalToolContext

SCHEMA: dict[str, Any] = {"parameters": {"type": "object", "properties": {"items": {"type": "array"}}}}


@pytest.fixture
def ctx(tmp_path: Path) -> LocalToolContext:
    return LocalToolContext(home=tmp_path, cwd=tmp_path)


class TestHostileToolOutput:
    """Whatever a tool returns or raises, its result encodes as UTF-8 with U+FFFD for each lone half."""

    async def test_listing_of_a_non_utf8_file_name(self, ctx: LocalToolContext, tmp_path: Path) -> None:
        """A handler listing a real directory (os.listdir gives surrogate escapes for such names) is repaired."""
        (tmp_path / os.fsdecode(b"bad\xff.txt")).write_text("x")

        async def listing(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
            return ToolResult({"files": sorted(os.listdir(tmp_path))})

        registry = ToolRegistry()
        registry.register("ls", "file", SCHEMA, listing)
        result = (await dispatch(registry, "ls", {}, ctx)).text
        result.encode("utf-8")
        assert {"files": ["bad\ufffd.txt"]} == json.loads(result)

    async def test_exception_text_with_a_surrogate(self, ctx: LocalToolContext) -> None:
        """A crash whose message holds a lone surrogate becomes an encodable error result."""
        name = os.fsdecode(b"x/\xfe")

        async def boom(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
            raise OSError(f"cannot open {name}")

        registry = ToolRegistry()
        registry.register("boom", "t", SCHEMA, boom)
        result = (await dispatch(registry, "boom", {}, ctx)).text
        assert "boom failed: OSError: cannot open x/\ufffd" == json.loads(result.encode("utf-8"))["error"]

    async def test_payload_with_surrogates(self, ctx: LocalToolContext) -> None:
        """A result whose payload holds lone surrogates in keys and values still gives an encodable result."""
        async def structured(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
            return ToolResult({"k\udc80": ["\ud800"]})

        registry = ToolRegistry()
        registry.register("s", "t", SCHEMA, structured)
        assert {"k\ufffd": ["\ufffd"]} == json.loads((await dispatch(registry, "s", {}, ctx)).text.encode("utf-8"))
