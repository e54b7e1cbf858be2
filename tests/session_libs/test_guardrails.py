"""Tool-loop guardrail thresholds, message format and hard-stop switch."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

import conversation.guardrails as guardrails_module
from conversation.guardrails import (
    GuardrailAction,
    ToolCallGuardrailController,
    ToolCallSignature,
    annotate_result,
    blocked_reply,
    hard_stops_on,
)
from config.session import GuardrailsConfig

READ_ONLY = {"read_file", "search_files"}


def _controller(hard_stop: bool = False) -> ToolCallGuardrailController:
    return ToolCallGuardrailController(GuardrailsConfig(hard_stop_enabled=hard_stop), READ_ONLY.__contains__)


def _fail(controller: ToolCallGuardrailController, name: str, args: dict) -> GuardrailAction:
    return controller.after_call(name, args, '{"error": "boom"}', failed=True).action


class TestSignature:
    """Argument key order does not change a signature; values do."""

    def test_canonical(self) -> None:
        a = ToolCallSignature.from_call("t", {"a": 1, "b": [1, 2]})
        assert a == ToolCallSignature.from_call("t", {"b": [1, 2], "a": 1})
        assert a != ToolCallSignature.from_call("t", {"a": 2, "b": [1, 2]})
        assert a != ToolCallSignature.from_call("u", {"a": 1, "b": [1, 2]})


class TestSignatureHashedOnce:
    """A call retried unchanged is hashed once for its checks before and after; any other call is hashed anew."""

    def test_hashed_once_while_the_same(self, monkeypatch: pytest.MonkeyPatch) -> None:
        hashed: list[bytes] = []
        real = hashlib.sha256

        def sha256(data: bytes) -> Any:
            hashed.append(data)
            return real(data)

        controller = _controller(hard_stop=True)
        monkeypatch.setattr(guardrails_module.hashlib, "sha256", sha256)
        for _ in range(3):
            controller.before_call("write_file", {"path": ""})
            _fail(controller, "write_file", {"path": ""})
        assert hashed == [b'{"path":""}']
        # Another tool with the same arguments, and other arguments, are counted apart.
        assert controller.before_call("patch", {"path": ""}).action is GuardrailAction.ALLOW
        assert _fail(controller, "patch", {"path": ""}) is GuardrailAction.ALLOW
        assert _fail(controller, "write_file", {"path": "a"}) is GuardrailAction.WARN  # the same tool's 4th failure
        assert _fail(controller, "write_file", {"path": ""}) is GuardrailAction.WARN
        warning = controller.after_call("write_file", {"path": ""}, "{}", failed=True)
        assert warning.code == "repeated_exact_failure_warning" and warning.count == 5
        assert len(hashed) == 4  # the last two calls were the same


class TestExactFailure:
    """The same failing call warns at 2 and, with hard stops, is blocked after 5."""

    def test_thresholds_with_hard_stop(self) -> None:
        controller = _controller(hard_stop=True)
        args = {"command": "make"}
        actions = []
        for _ in range(5):
            assert controller.before_call("terminal", args).allows_execution
            actions.append(_fail(controller, "terminal", args))
        assert actions == [GuardrailAction.ALLOW, GuardrailAction.WARN, GuardrailAction.WARN, GuardrailAction.WARN, GuardrailAction.WARN]
        decision = controller.before_call("terminal", args)
        assert decision.action is GuardrailAction.BLOCK and decision.code == "repeated_exact_failure_block" and decision.count == 5
        reply = blocked_reply(decision)
        assert json.loads(reply.text)["error"].startswith("[Tool loop blocked: repeated_exact_failure_block; count=5; ")
        assert not reply.ok and reply.error == decision.render()

    def test_warning_format(self) -> None:
        controller = _controller()
        _fail(controller, "terminal", {"c": 1})
        decision = controller.after_call("terminal", {"c": 1}, "{}", failed=True)
        assert decision.code == "repeated_exact_failure_warning" and decision.count == 2
        annotated = annotate_result("out", decision)
        assert annotated.startswith("out\n\n[Tool loop warning: repeated_exact_failure_warning; count=2; ")
        assert annotated.endswith("]")

    def test_without_hard_stop_never_blocks(self) -> None:
        controller = _controller()
        for _ in range(10):
            _fail(controller, "terminal", {"c": 1})
        assert controller.before_call("terminal", {"c": 1}).action is GuardrailAction.ALLOW

    def test_success_clears_signature_and_tool(self) -> None:
        controller = _controller(hard_stop=True)
        for _ in range(5):
            _fail(controller, "terminal", {"c": 1})
        controller.after_call("terminal", {"c": 1}, "ok", failed=False)
        assert controller.before_call("terminal", {"c": 1}).action is GuardrailAction.ALLOW
        assert _fail(controller, "terminal", {"c": 1}) is GuardrailAction.ALLOW


class TestHermesRules:
    """Hermes's switches and exemptions: warnings off, blocks end the turn, tolerant tools, unattended sessions."""

    def test_warnings_can_be_turned_off_without_losing_hard_stops(self) -> None:
        config = GuardrailsConfig(warnings_enabled=False, hard_stop_enabled=True)
        controller = ToolCallGuardrailController(config, READ_ONLY.__contains__)
        assert {_fail(controller, "patch", {"n": 1}) for _ in range(5)} == {GuardrailAction.ALLOW}
        assert controller.before_call("patch", {"n": 1}).action is GuardrailAction.BLOCK

    def test_a_block_ends_the_turn_in_hermes_words(self) -> None:
        controller = _controller(hard_stop=True)
        for _ in range(5):
            _fail(controller, "patch", {"n": 1})
        decision = controller.before_call("patch", {"n": 1})
        assert decision.ends_turn and decision.message.startswith("Blocked patch: the same call failed 5 times")

    def test_work_output_failures_of_different_commands_never_halt(self) -> None:
        controller = _controller(hard_stop=True)
        for n in range(12):
            _fail(controller, "terminal", {"command": f"pytest -k case{n}"})
        assert controller.before_call("terminal", {"command": "pytest"}).allows_execution

    def test_unattended_sessions_stop_loops_by_default(self) -> None:
        assert not hard_stops_on(GuardrailsConfig(), "cli")
        assert hard_stops_on(GuardrailsConfig(), "cron")
        assert not hard_stops_on(GuardrailsConfig(non_interactive_hard_stop_enabled=False), "cron")
        assert hard_stops_on(GuardrailsConfig(hard_stop_enabled=True), "api")

    def test_every_chat_platform_is_attended(self) -> None:
        for source in ("cli", "api", "subagent", "telegram", "discord"):
            assert not hard_stops_on(GuardrailsConfig(), source), source


class TestWhatASuccessClears:
    """A success clears only its own call's count and its own tool's count, as in Hermes."""

    def test_a_successful_edit_leaves_another_calls_failures(self) -> None:
        controller = _controller(hard_stop=True)
        for _ in range(5):
            _fail(controller, "terminal", {"command": "make test"})
        controller.after_call("patch", {"path": "a.py"}, "{}", failed=False)
        controller.after_call("terminal", {"command": "ls"}, "{}", failed=False)
        decision = controller.before_call("terminal", {"command": "make test"})
        assert decision.action is GuardrailAction.BLOCK and decision.count == 5

    def test_a_success_of_the_same_tool_clears_its_tool_count_only(self) -> None:
        controller = _controller(hard_stop=True)
        for n in range(8):
            _fail(controller, "patch", {"n": n % 2})
        controller.after_call("patch", {"n": 99}, "{}", failed=False)
        assert controller.before_call("patch", {"n": 100}).allows_execution, "the tool's count was cleared"
        decision = controller.after_call("patch", {"n": 0}, "{}", failed=True)
        assert decision.code == "repeated_exact_failure_warning" and decision.count == 5, "the call's own count was kept"


class TestSameToolFailure:
    """One tool failing with varied arguments warns at 3 and halts after 8."""

    def test_thresholds(self) -> None:
        controller = _controller(hard_stop=True)
        actions = [_fail(controller, "patch", {"n": n}) for n in range(8)]
        assert actions[:2] == [GuardrailAction.ALLOW, GuardrailAction.ALLOW]
        assert set(actions[2:]) == {GuardrailAction.WARN}
        decision = controller.before_call("patch", {"n": 99})
        assert decision.action is GuardrailAction.HALT and decision.ends_turn and not decision.allows_execution
        assert decision.code == "same_tool_failure_halt" and decision.count == 8
        assert controller.before_call("terminal", {"n": 99}).action is GuardrailAction.ALLOW

    def test_warning_code(self) -> None:
        controller = _controller()
        _fail(controller, "patch", {"n": 1})
        _fail(controller, "patch", {"n": 2})
        assert controller.after_call("patch", {"n": 3}, "{}", failed=True).code == "same_tool_failure_warning"


class TestNoProgress:
    """A read-only tool returning the same result warns at 2 and is blocked after 5."""

    def test_thresholds(self) -> None:
        controller = _controller(hard_stop=True)
        args = {"path": "a.txt"}
        actions = [controller.after_call("read_file", args, "same", failed=False).action for _ in range(5)]
        assert actions == [GuardrailAction.ALLOW] + [GuardrailAction.WARN] * 4
        decision = controller.before_call("read_file", args)
        assert decision.action is GuardrailAction.BLOCK and decision.code == "idempotent_no_progress_block"

    def test_changed_result_restarts_count(self) -> None:
        controller = _controller()
        args = {"path": "a.txt"}
        controller.after_call("read_file", args, "one", failed=False)
        assert controller.after_call("read_file", args, "two", failed=False).action is GuardrailAction.ALLOW
        decision = controller.after_call("read_file", args, "two", failed=False)
        assert decision.code == "idempotent_no_progress_warning" and decision.count == 2

    def test_writing_tools_not_counted(self) -> None:
        controller = _controller()
        for _ in range(4):
            assert controller.after_call("write_file", {"p": 1}, "same", failed=False).action is GuardrailAction.ALLOW

    def test_reset_forgets(self) -> None:
        controller = _controller(hard_stop=True)
        for _ in range(5):
            controller.after_call("read_file", {}, "same", failed=False)
        controller.reset()
        assert controller.before_call("read_file", {}).action is GuardrailAction.ALLOW


class TestFailureIsTheFlag:
    """A call failed when its reply said so; what the result text looks like does not matter."""

    def test_error_looking_success_clears_failures(self) -> None:
        controller = _controller()
        _fail(controller, "terminal", {"c": 1})
        assert controller.after_call("terminal", {"c": 1}, '{"error": "x"}', failed=False).action is GuardrailAction.ALLOW
        # The success cleared the count: the next failure is the first again, so no warning.
        assert _fail(controller, "terminal", {"c": 1}) is GuardrailAction.ALLOW

    def test_plain_text_failure_counts(self) -> None:
        controller = _controller()
        controller.after_call("terminal", {"c": 1}, "no JSON here", failed=True)
        assert controller.after_call("terminal", {"c": 1}, "no JSON here", failed=True).code == "repeated_exact_failure_warning"


class TestRepeatedFailure:
    """The decisions foretold for a failing call made again are the controller's own, call by call, from any counts."""

    @pytest.mark.parametrize("hard_stop", [False, True])
    @pytest.mark.parametrize("warnings", [False, True])
    @pytest.mark.parametrize("name", ["write_file", "terminal"])
    def test_as_the_controller_decides(self, hard_stop: bool, warnings: bool, name: str) -> None:
        config = GuardrailsConfig(hard_stop_enabled=hard_stop, warnings_enabled=warnings)
        controller = ToolCallGuardrailController(config, READ_ONLY.__contains__)
        args = {"path": ""}
        # Counts from before: the tool failed with other arguments, the call succeeded once as a read.
        controller.after_call(name, {"path": "a"}, '{"error": "x"}', failed=True)
        controller.after_call(name, {"path": "b"}, '{"error": "x"}', failed=True)
        controller.after_call(name, args, '{"error": "x"}', failed=True)
        run = controller.repeated_failure(name, args)
        foretold = [(run.allows(n), run.after(n)) for n in range(1, 13)]
        decided = []
        for _ in range(12):
            allowed = controller.before_call(name, args).allows_execution
            decided.append((allowed, controller.after_call(name, args, '{"error": "x"}', failed=True)))
        assert foretold == decided
        assert any(d.action is GuardrailAction.WARN for _, d in decided) is warnings
        assert (False in [a for a, _ in decided]) is hard_stop

    def test_counted_as_after_call_counts(self) -> None:
        counted, called = _controller(hard_stop=True), _controller(hard_stop=True)
        for controller in (counted, called):
            controller.after_call("write_file", {"path": "a"}, '{"error": "x"}', failed=True)
        run = counted.repeated_failure("write_file", {"path": ""})
        for _ in range(3):
            counted.count_repeated(run)
            called.after_call("write_file", {"path": ""}, '{"error": "x"}', failed=True)
        for args in ({"path": ""}, {"path": "a"}, {"path": "c"}):
            assert counted.before_call("write_file", args) == called.before_call("write_file", args)
            assert counted.after_call("write_file", args, "e", failed=True) == called.after_call("write_file", args, "e", failed=True)
