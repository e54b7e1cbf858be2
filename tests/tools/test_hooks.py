"""The hook runner: which hooks run for a call, what their answers and failures do to it, and timeouts."""

from __future__ import annotations

import json
import shlex
import sys
from typing import Any

import attrs
import pytest
import trio

from config.hooks import HookEntry, HooksConfig
from tools.hooks import Hook, HookRunner, context_of, hooks_from_config, import_callable

FIELDS = {"tool_name": "terminal", "args": {"command": "git push"}, "session_id": "s1"}


def _python(expression: str) -> str:
    """A command hook running ``expression`` in Python."""
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(expression)}"


def _runner(*entries: HookEntry, event: str = "pre_tool_call") -> HookRunner:
    return HookRunner(hooks_from_config(HooksConfig(**{event: entries}), {"PATH": "/usr/bin:/bin"}, import_callable))


class TestPreToolCall:
    """The first hook that answers block wins; the others' answers let the call run."""

    async def test_first_block_wins(self) -> None:
        runner = _runner(
            HookEntry(command=_python("print('{}')")),
            HookEntry(command=_python("print('{\"action\": \"block\", \"message\": \"first\"}')")),
            HookEntry(command=_python("print('{\"decision\": \"block\", \"reason\": \"second\"}')")),
        )
        assert await runner.pre_tool_call(FIELDS, "/") == "first"

    async def test_block_without_a_message_gets_the_default(self) -> None:
        runner = _runner(HookEntry(command=_python("print('{\"decision\": \"block\"}')")))
        assert await runner.pre_tool_call(FIELDS, "/") == "Blocked by a hook."

    async def test_the_matcher_matches_the_whole_name(self) -> None:
        runner = _runner(HookEntry(command=_python("print('{\"decision\": \"block\"}')"), matcher="term"))
        assert await runner.pre_tool_call(FIELDS, "/") is None
        assert await runner.pre_tool_call({**FIELDS, "tool_name": "term"}, "/") == "Blocked by a hook."

    async def test_a_hook_reads_hermes_payload(self) -> None:
        # It blocks with what it read, so the test sees the payload as the hook did.
        script = "import json, sys; p = json.load(sys.stdin); print(json.dumps({'action': 'block', 'message': json.dumps(p)}))"
        runner = _runner(HookEntry(command=_python(script)))
        reason = await runner.pre_tool_call({**FIELDS, "tool_call_id": "c1"}, "/tmp")
        assert reason is not None
        assert json.loads(reason) == {
            "hook_event_name": "pre_tool_call", "tool_name": "terminal", "tool_input": {"command": "git push"},
            "session_id": "s1", "cwd": "/tmp", "extra": {"tool_call_id": "c1"},
        }


class TestFailures:
    """A hook that fails lets its call run, or blocks it when its on_error says so, saying why."""

    @pytest.mark.parametrize(
        ("command", "why"),
        [
            (_python("print('not json')"), "not JSON"),
            (_python("print('[1]')"), "not an object"),
            ("/nonexistent/hook", "command not found"),
            ("'unbalanced", "cannot be split"),
        ],
    )
    async def test_failure(self, command: str, why: str) -> None:
        assert await _runner(HookEntry(command=command)).pre_tool_call(FIELDS, "/") is None
        blocked = await _runner(HookEntry(command=command, on_error="block")).pre_tool_call(FIELDS, "/")
        assert blocked is not None and why in blocked

    async def test_a_python_hook_that_cannot_be_imported(self) -> None:
        blocked = await _runner(HookEntry(python="no_such_module_x:f", on_error="block")).pre_tool_call(FIELDS, "/")
        assert blocked is not None and "ModuleNotFoundError" in blocked

    async def test_a_nonzero_exit_still_answers(self) -> None:
        hook = _python("print('{\"decision\": \"block\", \"reason\": \"no\"}'); raise SystemExit(2)")
        assert await _runner(HookEntry(command=hook)).pre_tool_call(FIELDS, "/") == "no"


class TestContext:
    """pre_llm_call answers give the text added to the turn's message: Hermes's {"context": ...}, or a string."""

    async def test_answers(self) -> None:
        runner = _runner(
            HookEntry(command=_python("print('{\"context\": \"from a command\"}')")),
            HookEntry(command=_python("print('{\"context\": \"  \"}')")),
            HookEntry(command=_python("pass")),
            event="pre_llm_call",
        )
        answers = await runner.notify("pre_llm_call", {"session_id": "s1"}, "/")
        assert [context_of(answer) for answer in answers] == ["from a command", None]
        assert context_of("from a plugin") == "from a plugin"


class TestTimeouts:
    """A hook is cut off at its timeout (on Trio's clock)."""

    async def test_an_async_hook_that_never_answers(self, autojump_clock: trio.abc.Clock) -> None:
        async def forever(**fields: Any) -> None:
            await trio.sleep_forever()

        hook = attrs.evolve(Hook.of_callable("pre_tool_call", "plugin slow", forever), timeout=5)
        started = trio.current_time()
        assert await HookRunner([hook]).pre_tool_call(FIELDS, "/") is None
        assert trio.current_time() - started == pytest.approx(5)
        closed = attrs.evolve(hook, on_error="block")
        assert "timed out after 5 s" in (await HookRunner([closed]).pre_tool_call(FIELDS, "/") or "")

    async def test_observers_never_raise(self) -> None:
        def broken(**fields: Any) -> None:
            raise RuntimeError("observer bug")

        runner = HookRunner([Hook.of_callable("post_tool_call", "plugin bug", broken)])
        await runner.notify("post_tool_call", FIELDS, "/")


class TestWants:
    """With no hook on an event, nothing runs for it."""

    def test_wants(self) -> None:
        runner = _runner(HookEntry(command="true"), event="post_llm_call")
        assert runner.wants("post_llm_call") and not runner.wants("pre_tool_call")
        assert not HookRunner().wants("pre_tool_call")
        assert [hook.label for hook in runner.hooks()] == ["true"]
