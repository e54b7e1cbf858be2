"""Whole turns through the real SDKs: text, tools, alternation, persistence."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
import trio
import trio.testing

from conversation.history import check_alternation
from conversation.prompt import session_line
from config.loader import Config
from config.tools import ToolsConfig
from messages.chat import messages_from_dicts
from messages.events import TextDelta, ToolFinished, ToolStarted, TurnStarted
from messages.session import UserMessage
from tests.session.harness import collect_turn, open_harness, run_turn
from tools.results import ToolResult

API_MODES = ["chat_completions", "anthropic_messages", "codex_responses"]


class TestToolConversation:
    """A model that calls a tool, then answers."""

    @pytest.mark.parametrize("api_mode", API_MODES)
    async def test_multi_turn_with_a_tool(self, tmp_path: Path, api_mode: str) -> None:
        """The tool runs, its result reaches the model, the answer streams, history stays valid and stored."""
        async with open_harness(tmp_path) as h:
            handle, events_in, session_id = await h.start_session(api_mode=api_mode)
            h.provider.push(
                {"tool_calls": [{"id": "call_1", "name": "terminal", "arguments": {"command": "echo hello-from-tool"}}]},
                {"text": "The command printed hello-from-tool.", "chunks": 4},
            )
            finished, events = await run_turn(handle, events_in, "run echo")
            assert finished.reason == "completed"
            assert finished.final_text == "The command printed hello-from-tool."
            kinds = [type(e) for e in events]
            assert kinds[0] is TurnStarted and ToolStarted in kinds and ToolFinished in kinds
            assert "".join(e.text for e in events if isinstance(e, TextDelta)) == finished.final_text
            seqs = [e.seq for e in events]
            assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
            # The second request carried the tool result back to the model.
            second = json.dumps(h.provider.requests[1].body)
            assert "hello-from-tool" in second
            # A second turn continues the same conversation.
            h.provider.push({"text": "again"})
            finished, _ = await run_turn(handle, events_in, "and now?")
            assert finished.final_text == "again"
            loaded = await h.deps.store.load(session_id)
            check_alternation(messages_from_dicts(loaded.messages))
            roles = [m["role"] for m in loaded.messages]
            assert roles == ["system", "user", "assistant", "tool", "assistant", "user", "assistant"]

    async def test_parallel_safe_calls_run_at_once(self, tmp_path: Path) -> None:
        """Two read_file calls on different files run as parallel workers; results stay in call order."""
        async with open_harness(tmp_path) as h:
            (h.workdir / "a.txt").write_text("alpha\n")
            (h.workdir / "b.txt").write_text("beta\n")
            handle, events_in, session_id = await h.start_session()
            h.provider.push(
                {"tool_calls": [
                    {"id": "c1", "name": "read_file", "arguments": {"path": "a.txt"}},
                    {"id": "c2", "name": "read_file", "arguments": {"path": "b.txt"}},
                ]},
                {"text": "done"},
            )
            finished, events = await run_turn(handle, events_in, "read both")
            assert finished.final_text == "done"
            loaded = await h.deps.store.load(session_id)
            tools = [m for m in loaded.messages if m["role"] == "tool"]
            assert [m["tool_call_id"] for m in tools] == ["c1", "c2"]
            assert "alpha" in tools[0]["content"] and "beta" in tools[1]["content"]

    @pytest.mark.parametrize("cap", [1, 3])
    async def test_configured_parallel_cap_holds(self, tmp_path: Path, cap: int) -> None:
        """tools.max_parallel_tools bounds how many parallel-safe calls of one batch run together."""
        running = 0
        most = 0

        async def overlap_probe(args: dict, ctx: object) -> ToolResult:
            nonlocal running, most
            running += 1
            most = max(most, running)
            # Wakes once every other task is blocked: every call that may start has started by then.
            await trio.testing.wait_all_tasks_blocked()
            running -= 1
            return ToolResult({"ok": True})

        config = Config(tools=ToolsConfig(max_parallel_tools=cap))
        async with open_harness(tmp_path, config) as h:
            schema = {"description": "Overlap probe.", "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}}}
            h.deps.registry.register("overlap_probe", "probe", schema, overlap_probe, parallel_safe=True)
            handle, events_in, _ = await h.start_session(toolsets=("hermes-cli", "probe"))
            h.provider.push({"tool_calls": [{"id": f"o{i}", "name": "overlap_probe", "arguments": {"n": i}} for i in range(6)]},
                            {"text": "done"})
            finished, events = await run_turn(handle, events_in, "probe")
            assert finished.final_text == "done"
            assert sum(isinstance(e, ToolFinished) and e.ok for e in events) == 6
            assert most == cap

    async def test_unknown_tool_is_answered_not_run(self, tmp_path: Path) -> None:
        """A tool the session does not have gets an error result the model can act on."""
        async with open_harness(tmp_path) as h:
            handle, events_in, session_id = await h.start_session()
            h.provider.push(
                {"tool_calls": [{"id": "c1", "name": "launch_rockets", "arguments": {}}]},
                {"text": "ok"},
            )
            finished, _ = await run_turn(handle, events_in, "go")
            assert finished.reason == "completed"
            loaded = await h.deps.store.load(session_id)
            tool = next(m for m in loaded.messages if m["role"] == "tool")
            assert "Unknown tool" in tool["content"] or "launch_rockets" in tool["content"]


class TestToolCallScope:
    """A tool call other than delegate_task runs in its cancel scope alone (no nursery: no scheduler pass at its end)."""

    async def test_a_task_started_under_the_call_is_refused_and_the_turn_goes_on(self, tmp_path: Path) -> None:
        """A handler that starts a task under its call's job gets a clear error as its result; nothing leaks."""

        async def starts_a_task(args: dict, ctx: Any) -> ToolResult:
            ctx.job.start_soon(trio.sleep_forever)
            return ToolResult({"ok": True})

        async with open_harness(tmp_path) as h:
            schema = {"description": "Starts a task.", "parameters": {"type": "object", "properties": {}}}
            h.deps.registry.register("starts_a_task", "probe", schema, starts_a_task)
            handle, events_in, session_id = await h.start_session(toolsets=("hermes-cli", "probe"))
            h.provider.push({"tool_calls": [{"id": "s1", "name": "starts_a_task", "arguments": {}}]}, {"text": "done"})
            finished, events = await run_turn(handle, events_in, "go")
            assert finished.final_text == "done"
            [result] = [e for e in events if isinstance(e, ToolFinished)]
            assert not result.ok
            tool = next(m for m in (await h.deps.store.load(session_id)).messages if m["role"] == "tool")
            assert "starts no helper tasks" in tool["content"]


class TestTurnInTree:
    """A started turn is visible at once."""

    async def test_turn_is_in_the_tree_when_started_is_answered(self, tmp_path: Path) -> None:
        """The session answers "started" only once its turn is registered (the running-turn cap counts it)."""
        async with open_harness(tmp_path) as h:
            handle, events_in, sid = await h.start_session()
            h.provider.push({"text": "hi"})
            assert await handle.ask(UserMessage("hello")) == "started"
            assert f"session:{sid}/turn" in h.system.registry
            await collect_turn(events_in)


class _Bug(BaseException):
    """Escapes dispatch's net for tool errors, as a bug in the session's own code would."""


class TestTurnFailure:
    """A bug in a turn ends that turn with an error, never the session."""

    async def test_failed_turn_is_closed_and_the_session_goes_on(self, tmp_path: Path) -> None:
        """The turn reports error; the stored history is valid and matches the session's; the next turn works."""

        async def buggy(args: dict, ctx: object) -> ToolResult:
            raise _Bug("the tool path broke")

        async with open_harness(tmp_path) as h:
            schema = {"description": "Breaks.", "parameters": {"type": "object", "properties": {}}}
            h.deps.registry.register("buggy", "probe", schema, buggy)
            handle, events_in, sid = await h.start_session(toolsets=("hermes-cli", "probe"))
            h.provider.push({"tool_calls": [{"id": "b1", "name": "buggy", "arguments": {}}]})
            finished, _ = await run_turn(handle, events_in, "break it")
            assert (finished.reason, finished.final_text) == ("error", f"Error: {finished.error}")
            assert "the tool path broke" in (finished.error or "")
            stored = (await h.deps.store.load(sid)).messages
            check_alternation(messages_from_dicts(stored))
            assert [m["role"] for m in stored[-3:]] == ["assistant", "tool", "assistant"]
            h.provider.push({"text": "still here"})
            finished, _ = await run_turn(handle, events_in, "again")
            assert (finished.reason, finished.final_text) == ("completed", "still here")
            sent = h.provider.requests[-1].body["messages"]
            assert [m["role"] for m in sent[-4:]] == ["assistant", "tool", "assistant", "user"]


class TestPrompt:
    """The system prompt is built once, with memory, and frozen."""

    async def test_memory_is_in_the_system_prompt(self, tmp_path: Path) -> None:
        """MEMORY.md entries reach the system prompt the provider sees."""
        async with open_harness(tmp_path) as h:
            memories = h.home / "memories"
            memories.mkdir()
            (memories / "MEMORY.md").write_text("User prefers tabs over spaces.")
            handle, events_in, _ = await h.start_session()
            h.provider.push({"text": "noted"})
            await run_turn(handle, events_in, "hi")
            system = json.dumps(h.provider.requests[0].body)
            assert "User prefers tabs over spaces." in system

    @pytest.mark.parametrize("zone", ["Pacific/Kiritimati", "Pacific/Pago_Pago"])
    async def test_the_day_is_the_users_time_zones(self, tmp_path: Path, zone: str) -> None:
        """``timezone`` decides the day: 25 hours apart, these two zones never share a date."""
        async with open_harness(tmp_path, zone=ZoneInfo(zone)) as h:
            before = datetime.datetime.now(ZoneInfo(zone)).date()
            handle, events_in, _ = await h.start_session()
            after = datetime.datetime.now(ZoneInfo(zone)).date()
            h.provider.push({"text": "one"})
            await run_turn(handle, events_in, "hi")
            prompt = h.provider.requests[0].body["messages"][0]["content"]
            assert any(prompt.endswith(f"\n\n{session_line(day, 'scripted-model', 'custom')}") for day in {before, after})

    async def test_the_session_line_ends_a_prompt_that_stays_the_same(self, tmp_path: Path) -> None:
        """As Hermes's, the prompt ends with the day the conversation started, the model and the provider,
        and every turn sends it byte for byte (the provider's cached prefix holds)."""
        async with open_harness(tmp_path) as h:
            before = datetime.date.today()
            handle, events_in, _ = await h.start_session()
            after = datetime.date.today()
            h.provider.push({"text": "one"}, {"text": "two"})
            await run_turn(handle, events_in, "hi")
            await run_turn(handle, events_in, "again")
            first, second = (r.body["messages"][0]["content"] for r in h.provider.requests)
            assert first == second
            assert any(
                first.endswith(f"\n\n{session_line(day, 'scripted-model', 'custom')}") for day in {before, after}
            ), first[-200:]

    async def test_a_messages_system_addition_is_its_turns_alone(self, tmp_path: Path) -> None:
        """A message's ``system`` text (a chat's ``channel_prompts`` entry) ends the system prompt of the turn it
        starts, as Hermes's ephemeral prompt: the next turn's requests go without it, and it is never stored."""
        async with open_harness(tmp_path) as h:
            handle, events_in, session_id = await h.start_session()
            h.provider.push({"text": "Arr."}, {"text": "Plain."})
            await handle.tell(UserMessage("hi", system="Answer as a pirate would."))
            await collect_turn(events_in)
            await run_turn(handle, events_in, "again")
            first, second = (r.body["messages"][0]["content"] for r in h.provider.requests)
            assert first == f"{second}\n\nAnswer as a pirate would."
            loaded = await h.deps.store.load(session_id)
            assert "pirate" not in json.dumps(loaded.messages)


class TestCounters:
    """The store's counters grow by each turn's own usage."""

    async def test_tokens_are_counted_once_per_turn(self, tmp_path: Path) -> None:
        """Two turns add their own tokens, not the running total twice."""
        async with open_harness(tmp_path) as h:
            handle, events_in, sid = await h.start_session()
            h.provider.push({"text": "one", "usage": {"prompt_tokens": 100, "completion_tokens": 10}},
                            {"text": "two", "usage": {"prompt_tokens": 200, "completion_tokens": 20}})
            await run_turn(handle, events_in, "a")
            await run_turn(handle, events_in, "b")
            # Counters are written just after TurnFinished is published.
            with trio.fail_after(5):
                while (info := await h.deps.store.get_session(sid)).tokens_in < 300:
                    await trio.sleep(0.01)
            assert (info.tokens_in, info.tokens_out) == (300, 30)


class TestResetTools:
    """The tool list is frozen until an explicit reset."""

    async def test_new_tool_appears_only_after_reset(self, tmp_path: Path) -> None:
        """A tool registered mid-session is offered only after ResetTools."""
        from messages.session import ResetTools

        async with open_harness(tmp_path) as h:
            handle, events_in, sid = await h.start_session()

            async def ping(args: dict, ctx: object) -> ToolResult:
                return ToolResult({"pong": True})

            # Registered into a toolset the session has enabled, after its tools were frozen.
            h.deps.registry.register("ping", "todo", {"description": "Pong.", "parameters": {"type": "object", "properties": {}}}, ping)
            h.provider.push({"text": "a"}, {"text": "b"})
            await run_turn(handle, events_in, "first")
            names = await handle.ask(ResetTools())
            await run_turn(handle, events_in, "second")
            offered = [{t["function"]["name"] for t in r.body.get("tools", [])} for r in h.provider.requests]
            assert "ping" not in offered[0] and "ping" in offered[1] and "ping" in names
