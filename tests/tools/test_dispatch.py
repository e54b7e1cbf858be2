"""The dispatch path and argument validation."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.tools.helpers import echo_handler
from tools.context import ToolContext
from tools.dispatch import dispatch
from tools.errors import ArgumentValidationError, ClarifyUnavailable
from tools.registry import ToolRegistry
from tools.testing import LocalToolContext
from tools.validation import validate_arguments

READ_SCHEMA: dict[str, Any] = {
    "description": "read",
    "parameters": {
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "offset": {"type": "integer", "minimum": 1},
            "limit": {"type": "integer", "maximum": 2000},
            "mode": {"type": "string", "enum": ["text", "lines"]},
            "flags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
            "strict": {"type": "boolean"},
        },
        "required": ["path"],
        "additionalProperties": False,
    },
}


@pytest.fixture
def ctx(tmp_path: Path) -> LocalToolContext:
    return LocalToolContext(home=tmp_path, cwd=tmp_path)


class TestValidateArguments:
    """Arguments are checked against the schema with model-actionable errors."""

    def test_valid_arguments_coerced(self) -> None:
        args = validate_arguments("read_file", {"path": "a", "offset": "3", "strict": "true", "limit": 5.0}, READ_SCHEMA["parameters"])
        assert {"path": "a", "offset": 3, "strict": True, "limit": 5} == args
        assert isinstance(args["limit"], int)

    @pytest.mark.parametrize(
        ("args", "message"),
        [
            ({}, "'path' is required"),
            ({"path": 3}, "'path' must be a string, got 3"),
            ({"path": "a", "offset": 0}, "'offset' must be >= 1, got 0"),
            ({"path": "a", "limit": 5000}, "'limit' must be <= 2000"),
            ({"path": "a", "offset": "three"}, "'offset' must be an integer, got \"three\""),
            ({"path": "a", "mode": "bytes"}, "'mode' must be one of \"text\", \"lines\""),
            ({"path": "a", "flags": ["x", 1]}, "'flags'[1] must be a string"),
            ({"path": "a", "flags": ["x", "y", "z"]}, "at most 2 items"),
            ({"path": "a", "bogus": 1}, "unknown argument 'bogus'"),
            ({"path": "a", "strict": 1}, "'strict' must be a boolean"),
        ],
    )
    def test_errors(self, args: dict[str, Any], message: str) -> None:
        with pytest.raises(ArgumentValidationError) as info:
            validate_arguments("read_file", args, READ_SCHEMA["parameters"])
        assert message in str(info.value)
        assert "Expected: {path: string, offset: integer (optional)" in str(info.value)

    def test_all_problems_reported_together(self) -> None:
        with pytest.raises(ArgumentValidationError) as info:
            validate_arguments("read_file", {"offset": -1, "mode": "x"}, READ_SCHEMA["parameters"])
        text = str(info.value)
        assert "'path' is required" in text and "'offset' must be >= 1" in text and "'mode' must be one of" in text

    def test_null_optional_is_absent(self) -> None:
        assert {"path": "a"} == validate_arguments("t", {"path": "a", "offset": None}, READ_SCHEMA["parameters"])

    def test_not_an_object(self) -> None:
        with pytest.raises(ArgumentValidationError, match="must be a JSON object"):
            validate_arguments("t", ["a"], READ_SCHEMA["parameters"])


class TestDispatch:
    """Lookup, validation, crashes and caps all end as JSON results."""

    async def test_unknown_tool_lists_available(self, ctx: LocalToolContext) -> None:
        registry = ToolRegistry()
        registry.register("read_file", "file", READ_SCHEMA, echo_handler)
        registry.register("hidden", "file", READ_SCHEMA, echo_handler, check_fn=lambda: False)
        result = json.loads(await dispatch(registry, "nope", {}, ctx))
        assert {"error": "Unknown tool: nope. Available: read_file"} == result

    async def test_allowed_set_limits_tools(self, ctx: LocalToolContext) -> None:
        registry = ToolRegistry()
        registry.register("read_file", "file", READ_SCHEMA, echo_handler)
        registry.register("write_file", "file", READ_SCHEMA, echo_handler)
        result = json.loads(await dispatch(registry, "write_file", {"path": "a"}, ctx, allowed={"read_file", "ghost"}))
        assert {"error": "Unknown tool: write_file. Available: read_file"} == result
        ok = json.loads(await dispatch(registry, "read_file", {"path": "a"}, ctx, allowed={"read_file"}))
        assert {"args": {"path": "a"}} == ok

    async def test_unavailable_tool(self, ctx: LocalToolContext) -> None:
        registry = ToolRegistry()
        registry.register("hidden", "file", READ_SCHEMA, echo_handler, check_fn=lambda: False)
        result = json.loads(await dispatch(registry, "hidden", {"path": "a"}, ctx))
        assert result["error"].startswith("Tool hidden is not available right now")

    async def test_validated_args_reach_handler(self, ctx: LocalToolContext) -> None:
        registry = ToolRegistry()
        registry.register("read_file", "file", READ_SCHEMA, echo_handler)
        result = json.loads(await dispatch(registry, "read_file", {"path": "a", "offset": "2"}, ctx))
        assert {"args": {"path": "a", "offset": 2}} == result

    async def test_invalid_args_error(self, ctx: LocalToolContext) -> None:
        registry = ToolRegistry()
        registry.register("read_file", "file", READ_SCHEMA, echo_handler)
        result = json.loads(await dispatch(registry, "read_file", {"limit": 1}, ctx))
        assert "Invalid arguments for read_file: 'path' is required" in result["error"]

    async def test_crashing_handler_logged_and_redacted(self, ctx: LocalToolContext, caplog: pytest.LogCaptureFixture) -> None:
        async def boom(args: dict[str, Any], ctx: ToolContext) -> str:
            raise RuntimeError("auth failed for sk-proj-AAAAAAAAAAAAAAAAAAAA1234")

        registry = ToolRegistry()
        registry.register("boom", "t", {"parameters": {"type": "object"}}, boom)
        with caplog.at_level(logging.ERROR, logger="tools.dispatch"):
            result = json.loads(await dispatch(registry, "boom", {}, ctx))
        assert {"error": "boom failed: RuntimeError: auth failed for [REDACTED]"} == result
        assert "tool boom crashed" in caplog.text
        assert "sk-proj-AAAA" not in caplog.text

    async def test_clarify_unavailable_message(self, ctx: LocalToolContext) -> None:
        async def ask(args: dict[str, Any], ctx: ToolContext) -> str:
            raise ClarifyUnavailable("nobody")

        registry = ToolRegistry()
        registry.register("clarify", "clarify", {"parameters": {"type": "object"}}, ask)
        result = json.loads(await dispatch(registry, "clarify", {}, ctx))
        assert {"error": "Clarify tool is not available in this execution context."} == result

    async def test_result_capped(self, ctx: LocalToolContext) -> None:
        async def big(args: dict[str, Any], ctx: ToolContext) -> str:
            return "z" * 500

        registry = ToolRegistry()
        registry.register("big", "t", {"parameters": {"type": "object"}}, big, max_result_size_chars=50)
        result = await dispatch(registry, "big", {}, ctx)
        assert result.startswith("z" * 50 + "\n\n[... 450 characters omitted")

    async def test_cancellation_propagates(self, ctx: LocalToolContext) -> None:
        started = trio.Event()

        async def slow(args: dict[str, Any], ctx: ToolContext) -> str:
            started.set()
            await trio.sleep_forever()
            return "{}"

        registry = ToolRegistry()
        registry.register("slow", "t", {"parameters": {"type": "object"}}, slow)
        with trio.move_on_after(5) as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(dispatch, registry, "slow", {}, ctx)
                await started.wait()
                nursery.cancel_scope.cancel()
        assert not scope.cancelled_caught
