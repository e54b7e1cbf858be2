"""Interrupt and steer at awkward moments; nothing may leak and the next turn works."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trio

from conversation.history import check_alternation
from conversation.steer import STEER_OPEN
from config.loader import Config
from config.session import DisplayConfig
from messages.chat import messages_from_dicts
from messages.events import SessionEvent, TextDelta, ToolStarted
from messages.session import Interrupt, Steer, UserMessage
from store.memory import InMemorySessionStore
from tests.session.harness import Harness, collect_turn, open_harness, run_turn
from tests.terminal.helpers import pid_alive
from tools.results import ToolResult


async def wait_for(subscription: Any, predicate: Any, seen: list[SessionEvent]) -> SessionEvent:
    async for event in subscription:
        seen.append(event)
        if predicate(event):
            return event
    raise AssertionError("subscription ended")


def register_slow_tool(h: Harness) -> None:
    async def slow_probe(args: dict[str, Any], ctx: Any) -> ToolResult:
        ctx.emit(f"probe {args.get('n')} waiting")
        await trio.sleep_forever()
        return ToolResult({})  # pragma: no cover

    schema = {"description": "Waits forever.", "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}}}
    h.deps.registry.register("slow_probe", "probe", schema, slow_probe, parallel_safe=True)


def only_session_left(h: Harness, session_id: str) -> None:
    assert [p for p in h.system.registry.paths() if p] == [f"session:{session_id}"], h.system.registry.paths()


async def next_turn_works(h: Harness, handle: Any, events_in: Any, session_id: str) -> None:
    h.provider.push({"text": "fresh start"})
    finished, _ = await run_turn(handle, events_in, "next")
    assert (finished.reason, finished.final_text) == ("completed", "fresh start")
    check_alternation(messages_from_dicts((await h.deps.store.load(session_id)).messages))


class SlowFirstSave(InMemorySessionStore):
    """A store whose first turn-end save waits for the test (a slow disk, made deterministic)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate, self.holding = trio.Event(), trio.Event()

    async def update_counters(self, session_id: str, **counts: Any) -> None:
        if not self.gate.is_set():
            self.holding.set()
            await self.gate.wait()
        await super().update_counters(session_id, **counts)


class TestInterrupt:
    """Interrupt cancels the turn's scope; history stays valid; nothing is left running."""

    async def test_before_first_byte(self, tmp_path: Path) -> None:
        """Cancelled while the provider has not answered: the connection closes, the turn ends interrupted."""
        async with open_harness(tmp_path) as h:
            handle, events_in, sid = await h.start_session()
            h.provider.push({"text": "too late", "delay_first_byte": 30})
            await handle.tell(UserMessage("hello"))
            await trio.sleep(0.3)
            await handle.tell(Interrupt())
            finished, _ = await collect_turn(events_in)
            assert finished.reason == "interrupted"
            messages = (await h.deps.store.load(sid)).messages
            assert messages[-1] == {"role": "assistant", "content": "Operation interrupted."}
            with trio.fail_after(5):
                while not h.provider.disconnects:
                    await trio.sleep(0.01)
            only_session_left(h, sid)
            await next_turn_works(h, handle, events_in, sid)

    async def test_mid_stream_keeps_partial_text(self, tmp_path: Path) -> None:
        """Text already streamed is kept as the assistant's reply."""
        async with open_harness(tmp_path) as h:
            handle, events_in, sid = await h.start_session()
            h.provider.push({"text": "one two three four five six seven eight", "chunks": 8, "chunk_delay": 0.2})
            await handle.tell(UserMessage("count"))
            seen: list[SessionEvent] = []
            await wait_for(events_in, lambda e: isinstance(e, TextDelta), seen)
            await handle.tell(Interrupt())
            finished, rest = await collect_turn(events_in)
            assert finished.reason == "interrupted"
            streamed = "".join(e.text for e in seen + rest if isinstance(e, TextDelta))
            messages = (await h.deps.store.load(sid)).messages
            assert messages[-1]["role"] == "assistant" and messages[-1]["content"] == streamed
            assert 0 < len(streamed) < len("one two three four five six seven eight")
            only_session_left(h, sid)
            await next_turn_works(h, handle, events_in, sid)

    async def test_while_eight_workers_run(self, tmp_path: Path) -> None:
        """Eight parallel workers are all cancelled; each call gets a result; no worker survives."""
        async with open_harness(tmp_path) as h:
            register_slow_tool(h)
            handle, events_in, sid = await h.start_session(toolsets=("hermes-cli", "probe"))
            calls = [{"id": f"p{i}", "name": "slow_probe", "arguments": {"n": i}} for i in range(8)]
            h.provider.push({"tool_calls": calls})
            await handle.tell(UserMessage("probe"))
            seen: list[SessionEvent] = []
            while sum(isinstance(e, ToolStarted) for e in seen) < 8:
                await wait_for(events_in, lambda e: isinstance(e, ToolStarted), seen)
            assert len([p for p in h.system.registry.paths() if "/tool:" in p]) == 8
            await handle.tell(Interrupt())
            finished, _ = await collect_turn(events_in)
            assert finished.reason == "interrupted"
            messages = (await h.deps.store.load(sid)).messages
            results = [m for m in messages if m["role"] == "tool"]
            assert [m["tool_call_id"] for m in results] == [f"p{i}" for i in range(8)]
            assert all("probe" in m["content"] and "waiting" in m["content"] for m in results)
            only_session_left(h, sid)
            await next_turn_works(h, handle, events_in, sid)

    async def test_during_terminal_with_grandchildren(self, tmp_path: Path) -> None:
        """A running command and its grandchildren die; the result says [Command interrupted]."""
        async with open_harness(tmp_path) as h:
            handle, events_in, sid = await h.start_session()
            pidfile = h.workdir / "grandchild.pid"
            command = f"sleep 60 & echo $! >> {pidfile}; echo started; wait"
            h.provider.push({"tool_calls": [{"id": "t1", "name": "terminal", "arguments": {"command": command}}]})
            await handle.tell(UserMessage("run it"))
            seen: list[SessionEvent] = []
            await wait_for(events_in, lambda e: isinstance(e, ToolStarted), seen)
            with trio.fail_after(10):
                while not pidfile.exists() or not pidfile.read_text().strip():
                    await trio.sleep(0.02)
            grandchild = int(pidfile.read_text())
            await handle.tell(Interrupt())
            finished, _ = await collect_turn(events_in)
            assert finished.reason == "interrupted"
            tool = next(m for m in (await h.deps.store.load(sid)).messages if m["role"] == "tool")
            assert "[Command interrupted]" in tool["content"]
            with trio.fail_after(10):
                while pid_alive(grandchild):
                    await trio.sleep(0.05)
            only_session_left(h, sid)
            await next_turn_works(h, handle, events_in, sid)


class TestBusyInput:
    """A user message arriving while a turn runs."""

    async def test_interrupt_mode_replaces_the_running_turn(self, tmp_path: Path) -> None:
        """Default mode: the running turn is interrupted and the new message runs next."""
        async with open_harness(tmp_path) as h:
            handle, events_in, sid = await h.start_session()
            h.provider.push({"text": "slow", "delay_first_byte": 30}, {"text": "second answer"})
            await handle.tell(UserMessage("first"))
            await trio.sleep(0.3)
            await handle.tell(UserMessage("second"))
            first, _ = await collect_turn(events_in)
            second, _ = await collect_turn(events_in)
            assert (first.reason, second.reason, second.final_text) == ("interrupted", "completed", "second answer")

    async def test_queue_mode_runs_messages_in_order(self, tmp_path: Path) -> None:
        """queue: the running turn finishes, then queued messages run in order."""
        config = Config(display=DisplayConfig(busy_input_mode="queue"))
        async with open_harness(tmp_path, config) as h:
            handle, events_in, sid = await h.start_session()
            h.provider.push({"text": "one", "delay_first_byte": 0.5}, {"text": "two"}, {"text": "three"})
            await handle.tell(UserMessage("a"))
            assert await handle.ask(UserMessage("b")) == "queued"
            assert await handle.ask(UserMessage("c")) == "queued"
            texts = [(await collect_turn(events_in))[0].final_text for _ in range(3)]
            assert texts == ["one", "two", "three"]

    async def test_a_message_while_a_turn_is_put_away_waits_its_turn(self, tmp_path: Path) -> None:
        """A message that comes while a finished turn is being saved queues behind the ones already
        waiting: it neither jumps them nor starts a second turn beside the next one."""
        config = Config(display=DisplayConfig(busy_input_mode="queue"))
        store = SlowFirstSave()
        async with open_harness(tmp_path, config, store=store) as h:
            handle, events_in, sid = await h.start_session()
            h.provider.push({"text": "one", "delay_first_byte": 0.5}, {"text": "two"}, {"text": "three"})
            await handle.tell(UserMessage("a"))
            assert await handle.ask(UserMessage("b")) == "queued"
            first, _ = await collect_turn(events_in)
            await store.holding.wait()  # the first turn is over, its counters not saved yet
            assert await handle.ask(UserMessage("c")) == "queued"
            store.gate.set()
            rest = [await collect_turn(events_in) for _ in range(2)]
            assert [first.final_text, *(finished.final_text for finished, _ in rest)] == ["one", "two", "three"]
            assert [finished.reason for finished, _ in rest] == ["completed", "completed"]


class TestSteer:
    """Out-of-band text delivered with the next tool result."""

    async def test_steer_reaches_the_model_with_the_tool_result(self, tmp_path: Path) -> None:
        """A steer sent while a tool runs is appended to its result, wrapped, and seen by the next call."""
        async with open_harness(tmp_path) as h:
            handle, events_in, sid = await h.start_session()
            h.provider.push(
                {"tool_calls": [{"id": "t1", "name": "terminal", "arguments": {"command": "sleep 1; echo done"}}]},
                {"text": "ok, using the new direction"},
            )
            await handle.tell(UserMessage("work"))
            seen: list[SessionEvent] = []
            await wait_for(events_in, lambda e: isinstance(e, ToolStarted), seen)
            assert await handle.ask(Steer("  focus on the tests  ")) == "steered"
            finished, _ = await collect_turn(events_in)
            assert finished.reason == "completed"
            second = json.dumps(h.provider.requests[1].body, ensure_ascii=False)
            assert STEER_OPEN in second and "focus on the tests" in second

    async def test_empty_steer_is_rejected(self, tmp_path: Path) -> None:
        """Whitespace is not a steer: the sender gets a clear error."""
        async with open_harness(tmp_path) as h:
            handle, _, _ = await h.start_session()
            try:
                await handle.ask(Steer("   "))
            except Exception as exc:
                assert "empty" in str(exc).lower() or "whitespace" in str(exc).lower()
            else:
                raise AssertionError("an empty steer was accepted")


class TestSteerMode:
    """busy_input_mode: steer — a message during a tool is a steer, otherwise it waits."""

    async def test_message_during_tool_becomes_a_steer(self, tmp_path: Path) -> None:
        """While a tool runs the message is steered into the running turn, not queued as a new one."""
        config = Config(display=DisplayConfig(busy_input_mode="steer"))
        async with open_harness(tmp_path, config) as h:
            handle, events_in, sid = await h.start_session()
            h.provider.push(
                {"tool_calls": [{"id": "t1", "name": "terminal", "arguments": {"command": "sleep 1; echo done"}}]},
                {"text": "adjusted"},
            )
            await handle.tell(UserMessage("work"))
            seen: list[SessionEvent] = []
            await wait_for(events_in, lambda e: isinstance(e, ToolStarted), seen)
            assert await handle.ask(UserMessage("also check the logs")) == "steered"
            finished, _ = await collect_turn(events_in)
            assert finished.final_text == "adjusted"
            assert "also check the logs" in json.dumps(h.provider.requests[1].body, ensure_ascii=False)

    async def test_message_while_model_streams_is_queued(self, tmp_path: Path) -> None:
        """With no tool running the message waits for the next turn."""
        config = Config(display=DisplayConfig(busy_input_mode="steer"))
        async with open_harness(tmp_path, config) as h:
            handle, events_in, sid = await h.start_session()
            h.provider.push({"text": "first", "delay_first_byte": 0.5}, {"text": "second"})
            await handle.tell(UserMessage("one"))
            assert await handle.ask(UserMessage("two")) == "queued"
            texts = [(await collect_turn(events_in))[0].final_text for _ in range(2)]
            assert texts == ["first", "second"]
