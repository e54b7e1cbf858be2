"""The dispatch path and argument validation."""

from __future__ import annotations

import importlib
import json
import logging
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.tools.helpers import echo_handler
from tools.context import ToolContext
from tools.dispatch import RejectionReplies, dispatch, dispatch_rejection, rejection_of
from tools.errors import ArgumentValidationError, ClarifyUnavailable, ToolError, ToolInputError
from tools.registry import ToolRegistry
from tools.results import ToolReply, ToolResult, error_text
from tools.testing import LocalToolContext
from tools.validation import validate_arguments

# The module (``tools.dispatch`` is also the name of its function, re-exported by the package).
dispatch_module = importlib.import_module("tools.dispatch")

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
            ({"path": "a", "flags": ["x", 1]}, "'flags[1]' must be a string"),
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

    def test_a_nested_problem_names_its_path_once_quoted(self) -> None:
        schema = {"type": "object", "properties": {"todos": {"type": "array", "items": {
            "type": "object", "properties": {"id": {"type": "string"}, "n": {"type": "integer"}}, "required": ["id"],
        }}}}
        with pytest.raises(ArgumentValidationError) as info:
            validate_arguments("todo", {"todos": [{"id": "a"}, {"n": "x"}]}, schema)
        assert "'todos[1].id' is required" in str(info.value) and "'todos[1].n' must be an integer" in str(info.value)

    def test_null_optional_is_absent(self) -> None:
        assert {"path": "a"} == validate_arguments("t", {"path": "a", "offset": None}, READ_SCHEMA["parameters"])

    def test_not_an_object(self) -> None:
        with pytest.raises(ArgumentValidationError, match="must be a JSON object"):
            validate_arguments("t", ["a"], READ_SCHEMA["parameters"])


class TestDispatch:
    """Lookup, validation, crashes and caps all end as replies: ``{"error": ...}`` text with ok False."""

    async def test_unknown_tool_lists_available(self, ctx: LocalToolContext) -> None:
        registry = ToolRegistry()
        registry.register("read_file", "file", READ_SCHEMA, echo_handler)
        registry.register("hidden", "file", READ_SCHEMA, echo_handler, check_fn=lambda: False)
        reply = await dispatch(registry, "nope", {}, ctx)
        assert {"error": "Unknown tool: nope. Available: read_file"} == json.loads(reply.text)
        assert (reply.ok, reply.error) == (False, "Unknown tool: nope. Available: read_file")

    async def test_allowed_set_limits_tools(self, ctx: LocalToolContext) -> None:
        registry = ToolRegistry()
        registry.register("read_file", "file", READ_SCHEMA, echo_handler)
        registry.register("write_file", "file", READ_SCHEMA, echo_handler)
        result = json.loads((await dispatch(registry, "write_file", {"path": "a"}, ctx, allowed={"read_file", "ghost"})).text)
        assert {"error": "Unknown tool: write_file. Available: read_file"} == result
        ok = await dispatch(registry, "read_file", {"path": "a"}, ctx, allowed={"read_file"})
        assert ({"args": {"path": "a"}}, True, None) == (json.loads(ok.text), ok.ok, ok.error)

    async def test_unavailable_tool(self, ctx: LocalToolContext) -> None:
        registry = ToolRegistry()
        registry.register("hidden", "file", READ_SCHEMA, echo_handler, check_fn=lambda: False)
        reply = await dispatch(registry, "hidden", {"path": "a"}, ctx)
        assert json.loads(reply.text)["error"].startswith("Tool hidden is not available right now") and not reply.ok

    async def test_validated_args_reach_handler(self, ctx: LocalToolContext) -> None:
        registry = ToolRegistry()
        registry.register("read_file", "file", READ_SCHEMA, echo_handler)
        result = json.loads((await dispatch(registry, "read_file", {"path": "a", "offset": "2"}, ctx)).text)
        assert {"args": {"path": "a", "offset": 2}} == result

    async def test_invalid_args_error(self, ctx: LocalToolContext) -> None:
        registry = ToolRegistry()
        registry.register("read_file", "file", READ_SCHEMA, echo_handler)
        reply = await dispatch(registry, "read_file", {"limit": 1}, ctx)
        assert "Invalid arguments for read_file: 'path' is required" in json.loads(reply.text)["error"] and not reply.ok

    async def test_crashing_handler_logged_and_redacted(self, ctx: LocalToolContext, caplog: pytest.LogCaptureFixture) -> None:
        async def boom(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
            raise RuntimeError("auth failed for sk-proj-AAAAAAAAAAAAAAAAAAAA1234")

        registry = ToolRegistry()
        registry.register("boom", "t", {"parameters": {"type": "object"}}, boom)
        with caplog.at_level(logging.ERROR, logger="tools.dispatch"):
            reply = await dispatch(registry, "boom", {}, ctx)
        assert {"error": "boom failed: RuntimeError: auth failed for [REDACTED]"} == json.loads(reply.text)
        assert reply.error == "boom failed: RuntimeError: auth failed for [REDACTED]"
        assert "tool boom crashed" in caplog.text
        assert "sk-proj-AAAA" not in caplog.text

    @pytest.mark.parametrize("padding", [0, 10_000])
    async def test_a_refusal_is_redacted_in_its_text_and_its_error(self, ctx: LocalToolContext, padding: int) -> None:
        """The error is redacted as its text is, inline or (a long one) in a worker thread; a clean one is left as it is."""
        async def refuse(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
            raise ToolError("x" * padding + f" token={args['token']} refused")

        registry = ToolRegistry()
        registry.register("refuse", "t", {"parameters": {"type": "object"}}, refuse)
        secret = await dispatch(registry, "refuse", {"token": "ghp_" + "A1b2" * 9}, ctx)
        assert json.loads(secret.text)["error"] == secret.error
        assert secret.error.endswith("[REDACTED] refused") and "ghp_" not in secret.text
        clean = await dispatch(registry, "refuse", {"token": "none"}, ctx)
        assert clean.error == "x" * padding + " token=none refused" == json.loads(clean.text)["error"]

    async def test_clarify_unavailable_message(self, ctx: LocalToolContext) -> None:
        async def ask(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
            raise ClarifyUnavailable("nobody")

        registry = ToolRegistry()
        registry.register("clarify", "clarify", {"parameters": {"type": "object"}}, ask)
        result = json.loads((await dispatch(registry, "clarify", {}, ctx)).text)
        assert {"error": "Clarify tool is not available in this execution context."} == result

    async def test_result_capped(self, ctx: LocalToolContext) -> None:
        async def big(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
            return ToolResult({"z": "z" * 500})

        registry = ToolRegistry()
        registry.register("big", "t", {"parameters": {"type": "object"}}, big, max_result_size_chars=50)
        reply = await dispatch(registry, "big", {}, ctx)
        assert reply.text.startswith('{"z": "' + "z" * 43 + "\n\n[... 459 characters omitted") and reply.ok

    async def test_cancellation_propagates(self, ctx: LocalToolContext) -> None:
        started = trio.Event()

        async def slow(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
            started.set()
            await trio.sleep_forever()
            raise AssertionError("unreachable")

        registry = ToolRegistry()
        registry.register("slow", "t", {"parameters": {"type": "object"}}, slow)
        with trio.move_on_after(5) as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(dispatch, registry, "slow", {}, ctx)
                await started.wait()
                nursery.cancel_scope.cancel()
        assert not scope.cancelled_caught


class TestRejections:
    """A call dispatch fails before its handler is recognised without recording anything, and answered as dispatch answers it."""

    @staticmethod
    def _registry(ran: list[dict[str, Any]]) -> ToolRegistry:
        async def write(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
            ran.append(args)
            return ToolResult({"written": True})

        def check(args: Any) -> None:
            if not args["path"]:
                raise ToolInputError("the path is empty", hint="give one")

        registry = ToolRegistry()
        registry.register("write_file", "file", READ_SCHEMA, write, check_args=check)
        registry.register("hidden", "file", READ_SCHEMA, echo_handler, check_fn=lambda: False)
        return registry

    @pytest.mark.parametrize(
        ("name", "args"),
        [("write_file", {"path": ""}), ("write_file", {"limit": 1}), ("write_file", {"path": 3}), ("nope", {}), ("hidden", {"path": "a"})],
    )
    async def test_the_same_reply_as_dispatch(self, tmp_path: Path, name: str, args: dict[str, Any]) -> None:
        ran: list[dict[str, Any]] = []
        registry = self._registry(ran)
        rejection = rejection_of(registry, name, args)
        assert rejection is not None
        answered = await dispatch_rejection(registry, name, rejection, LocalToolContext(home=tmp_path, cwd=tmp_path))
        dispatched = await dispatch(registry, name, args, LocalToolContext(home=tmp_path, cwd=tmp_path))
        assert answered == dispatched and not answered.ok and ran == []

    async def test_the_tools_own_check_runs_before_its_handler(self, ctx: LocalToolContext) -> None:
        ran: list[dict[str, Any]] = []
        reply = await dispatch(self._registry(ran), "write_file", {"path": ""}, ctx)
        assert (json.loads(reply.text), reply.error, ran) == ({"error": "the path is empty", "hint": "give one"}, "the path is empty", [])

    def test_a_call_that_would_run_is_not_rejected(self) -> None:
        ran: list[dict[str, Any]] = []
        assert rejection_of(self._registry(ran), "write_file", {"path": "a"}) is None
        assert ran == []

    def test_a_crashing_check_is_left_to_dispatch(self) -> None:
        registry = ToolRegistry()
        registry.register("t", "t", READ_SCHEMA, echo_handler, check_args=lambda args: 1 / 0)
        assert rejection_of(registry, "t", {"path": "a"}) is None

    async def test_recorded_only_when_answered(self, ctx: LocalToolContext, caplog: pytest.LogCaptureFixture) -> None:
        """Recognising logs nothing; answering logs the rejected arguments, as dispatch does."""
        registry = self._registry([])
        with caplog.at_level(logging.INFO, logger="tools.dispatch"):
            rejection = rejection_of(registry, "write_file", {"limit": 1})
            assert rejection is not None and caplog.records == []
            await dispatch_rejection(registry, "write_file", rejection, ctx)
        assert [r.getMessage() for r in caplog.records] == [f"tool write_file rejected arguments: {rejection.message}"]
        assert rejection.message.startswith("Invalid arguments for write_file: 'path' is required")


class TestRejectionReplies:
    """The same rejected call made again gets the reply made the first time, still logged each time; one with
    details is made anew."""

    async def test_made_once_logged_each_time(
        self, ctx: LocalToolContext, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        finished: list[str] = []
        finish = dispatch_module._finish

        async def counted(registry: ToolRegistry, name: str, *rest: Any) -> ToolReply:
            finished.append(name)
            return await finish(registry, name, *rest)

        monkeypatch.setattr(dispatch_module, "_finish", counted)
        registry = TestRejections._registry([])
        replies = RejectionReplies(registry)
        schema = rejection_of(registry, "write_file", {"limit": 1})
        assert schema is not None and not schema.details
        with caplog.at_level(logging.INFO, logger="tools.dispatch"):
            first = await replies.reply("write_file", schema, ctx)
            same = rejection_of(registry, "write_file", {"limit": 1})
            assert same is not None and same is not schema
            again = await replies.reply("write_file", same, ctx)
            assert again == first == await dispatch_rejection(registry, "write_file", schema, ctx)
        assert finished == ["write_file", "write_file"]  # the second reply was not made again; the third is dispatch's
        assert [r.getMessage() for r in caplog.records] == [f"tool write_file rejected arguments: {schema.message}"] * 3
        detailed = rejection_of(registry, "write_file", {"path": ""})
        assert detailed is not None and detailed.details
        for _ in range(2):
            assert await replies.reply("write_file", detailed, ctx) == await dispatch_rejection(registry, "write_file", detailed, ctx)
        assert finished == ["write_file"] * 6


class TestRememberedRejections:
    """A call made again with arguments of the same JSON text is rejected for the reason found the first time,
    without checking it again, while its tool is registered and available as then; any other call is checked."""

    @staticmethod
    def _counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
        checked: list[str] = []
        rejection = dispatch_module.rejection_of

        def counted(registry: ToolRegistry, name: str, args: Any, **options: Any) -> Any:
            checked.append(name)
            return rejection(registry, name, args, **options)

        monkeypatch.setattr(dispatch_module, "rejection_of", counted)
        return checked

    def test_checked_once_while_the_same(self, monkeypatch: pytest.MonkeyPatch) -> None:
        checked = self._counted(monkeypatch)
        replies = RejectionReplies(TestRejections._registry([]))
        first = replies.rejection("write_file", {"path": ""})
        assert first is not None and first.message == "the path is empty"
        assert replies.rejection("write_file", {"path": ""}) is first
        assert checked == ["write_file"]
        # Equal as values, not as JSON: the schema tells them apart, so each is checked.
        assert replies.rejection("write_file", {"limit": 1}) == rejection_of(TestRejections._registry([]), "write_file", {"limit": 1})
        assert replies.rejection("write_file", {"limit": True}) == rejection_of(TestRejections._registry([]), "write_file", {"limit": True})
        assert replies.rejection("write_file", {"path": "a"}) is None
        assert checked == ["write_file"] * 4

    def test_checked_again_once_the_tool_is_replaced_or_unavailable(self, monkeypatch: pytest.MonkeyPatch) -> None:
        registry = TestRejections._registry([])
        available = [True]
        registry.register("gated", "file", READ_SCHEMA, echo_handler, check_fn=lambda: available[0])
        replies = RejectionReplies(registry)
        schema = replies.rejection("gated", {"limit": 1})
        assert schema is not None and schema.arguments
        available[0] = False
        monkeypatch.setattr(registry, "is_available", lambda name: available[0])
        gone = replies.rejection("gated", {"limit": 1})
        assert gone is not None and gone.message.startswith("Tool gated is not available right now")
        available[0] = True
        assert replies.rejection("gated", {"limit": 1}) == schema
        registry.register("gated", "file", READ_SCHEMA, echo_handler)
        checked = self._counted(monkeypatch)
        assert replies.rejection("gated", {"limit": 1}) == schema
        assert checked == ["gated"]


class TestTypedResults:
    """A handler returns a ToolResult or raises ToolError; dispatch renders once and carries ok beside the text."""

    async def test_result_rendered_once_with_non_ascii_kept(self, ctx: LocalToolContext) -> None:
        """The payload is rendered as JSON (non-ASCII as is) and the reply is ok."""

        async def greet(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
            return ToolResult({"greeting": "héllo", "n": 1})

        registry = ToolRegistry()
        registry.register("greet", "t", {"parameters": {"type": "object"}}, greet)
        assert ToolReply('{"greeting": "héllo", "n": 1}') == await dispatch(registry, "greet", {}, ctx)

    async def test_tool_error_is_the_model_message_with_details(self, ctx: LocalToolContext) -> None:
        """A ToolError's message (and details after it) is the error text; the reply is not ok."""

        async def search(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
            raise ToolError("backend down", backend="searxng")

        registry = ToolRegistry()
        registry.register("search", "t", {"parameters": {"type": "object"}}, search)
        reply = await dispatch(registry, "search", {}, ctx)
        assert ToolReply('{"error": "backend down", "backend": "searxng"}', error="backend down") == reply
        assert not reply.ok

    async def test_a_result_that_says_error_is_still_ok(self, ctx: LocalToolContext) -> None:
        """Success is what the handler returned, not what its text looks like: no text is parsed."""

        async def quoting(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
            return ToolResult({"error": "a field named error, returned as data"})

        registry = ToolRegistry()
        registry.register("quoting", "t", {"parameters": {"type": "object"}}, quoting)
        assert (await dispatch(registry, "quoting", {}, ctx)).ok

    async def test_an_unsuccessful_outcome_is_ok_but_counts_as_a_failure(self, ctx: LocalToolContext) -> None:
        """A result marked unsuccessful (a nonzero exit status) is an answer, yet the guardrails count it as failed."""

        async def failing_command(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
            return ToolResult({"output": "", "exit_code": 1}, unsuccessful=True)

        registry = ToolRegistry()
        registry.register("cmd", "t", {"parameters": {"type": "object"}}, failing_command)
        reply = await dispatch(registry, "cmd", {}, ctx)
        assert reply.ok and reply.counts_as_failure
        registry.register("greet", "t", {"parameters": {"type": "object"}}, echo_handler)
        assert not (await dispatch(registry, "greet", {}, ctx)).counts_as_failure

    async def test_handler_returning_text_is_a_failure(self, ctx: LocalToolContext, caplog: pytest.LogCaptureFixture) -> None:
        """A handler that returns a string instead of a ToolResult is reported as failed, and logged."""

        async def stringly(args: dict[str, Any], ctx: ToolContext) -> Any:
            return '{"fine": true}'

        registry = ToolRegistry()
        registry.register("stringly", "t", {"parameters": {"type": "object"}}, stringly)
        with caplog.at_level(logging.ERROR, logger="tools.dispatch"):
            reply = await dispatch(registry, "stringly", {}, ctx)
        assert reply.error == "stringly failed: TypeError: stringly returned str, not a ToolResult"
        assert "tool stringly crashed" in caplog.text

    async def test_error_text_is_the_one_failure_shape(self) -> None:
        """error_text writes Hermes's shape, repairing lone surrogates; ToolReply.failure uses it."""
        assert '{"error": "no \ufffd here", "code": 2}' == error_text("no \udc80 here", code=2)
        assert ToolReply.failure("gone").text == '{"error": "gone"}'
