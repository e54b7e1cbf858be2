"""Watching one turn: only its own session's events start and end it; usage is its own share."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio
import trio.testing

from actors.platform.api.completions import _Completion
from actors.platform.api.gateway import Admission, ApiGateway
from actors.platform.api.runs import RUN_EVENT_LIMIT, Run
from actors.platform.api.turns import TurnLost, TurnWatch
from actors.platform.api.wire import ChunkFrames, CompletionRequest, TurnUsage, chunk, sse_data
from config.api import ApiServerConfig
from actors.session.hub import EventHub
from messages.events import TextDelta, TurnFinished, TurnStarted, UsageUpdated


def _relay_child(hub: EventHub, cls: type, **fields: object) -> None:
    hub.relay(cls(session_id="child", path="sessions/session:parent/turn/subagent:1", **fields))


class TestTurnWatch:
    """A watch keeps to its own turn of its own session."""

    async def test_subagent_events_pass_through_but_never_finish_it(self) -> None:
        """A relayed child's TurnStarted/TurnFinished with the same text and id do not end the watch."""
        hub = EventHub("parent", "sessions/session:parent")
        watch = TurnWatch("parent", hub.subscribe("t"), "hello", TurnUsage(100, 10), "started")
        hub.publish(TurnStarted, turn_id=3, text="hello")
        _relay_child(hub, TurnStarted, turn_id=3, text="hello")
        _relay_child(hub, UsageUpdated, prompt_tokens=9999, completion_tokens=9999)
        _relay_child(hub, TurnFinished, turn_id=3, final_text="child answer", reason="completed")
        hub.publish(UsageUpdated, prompt_tokens=150, completion_tokens=25)
        hub.publish(TextDelta, text="parent answer")
        hub.publish(TurnFinished, turn_id=3, final_text="parent answer", reason="completed")
        seen = []
        while (event := await watch.next_event()) is not None:
            seen.append((event.session_id, type(event).__name__))
        assert seen[0] == ("parent", "TurnStarted") and seen[-1] == ("parent", "TurnFinished")
        assert ("child", "TurnFinished") in seen
        assert watch.outcome is not None
        assert watch.outcome.final_text == "parent answer"
        assert watch.outcome.usage == TurnUsage(50, 15)

    async def test_queued_behind_another_turn(self) -> None:
        """An earlier turn's events are skipped; its usage becomes the baseline."""
        hub = EventHub("s", "sessions/session:s")
        watch = TurnWatch("s", hub.subscribe("t"), "mine", TurnUsage(0, 0), "queued")
        hub.publish(UsageUpdated, prompt_tokens=40, completion_tokens=4)
        hub.publish(TextDelta, text="theirs")
        hub.publish(TurnFinished, turn_id=1, final_text="theirs", reason="completed")
        hub.publish(TurnStarted, turn_id=2, text="mine")
        hub.publish(UsageUpdated, prompt_tokens=90, completion_tokens=10)
        hub.publish(TurnFinished, turn_id=2, final_text="ours", reason="completed")
        first = await watch.next_event()
        assert isinstance(first, TurnStarted) and first.turn_id == 2
        while await watch.next_event() is not None:
            pass
        assert watch.outcome is not None
        assert (watch.outcome.final_text, watch.outcome.usage) == ("ours", TurnUsage(50, 6))

    async def test_session_stopping_is_turn_lost(self) -> None:
        """The stream ending before TurnFinished raises TurnLost."""
        hub = EventHub("s", "sessions/session:s")
        watch = TurnWatch("s", hub.subscribe("t"), "mine", TurnUsage(), "started")
        hub.publish(TurnStarted, turn_id=1, text="mine")
        hub.close_all("session stopped")
        assert isinstance(await watch.next_event(), TurnStarted)
        with pytest.raises(TurnLost, match="session stopped"):
            await watch.next_event()


class TestRunEventLog:
    """A run keeps its latest events; a resume from before them is told it fell behind."""

    def test_limit_and_fell_behind(self) -> None:
        """Past the limit the oldest go; resuming from a dropped id starts with fell_behind, then the rest."""
        run = Run("run_x", "s", True, None)
        for seq in range(1, RUN_EVENT_LIMIT + 11):
            run.record({"type": "text_delta", "id": seq * 2})
        assert len(run.events) == RUN_EVENT_LIMIT
        assert run.events[0]["id"] == 22
        resumed = run.events_after(4)
        assert resumed[0] == {"type": "fell_behind", "id": 4, "requested": 4, "oldest_available": 22}
        assert [e["id"] for e in resumed[1:3]] == [22, 24]
        assert [e["id"] for e in run.events_after(run.events[-2]["id"] - 1)] == [e["id"] for e in run.events[-2:]]
        assert run.events_after(run.events[-1]["id"]) == []


class TestNowait:
    """next_event_nowait drains what is buffered without waiting."""

    async def test_drains_then_none(self) -> None:
        """Buffered own events come out in order; None when empty; None after the finish."""
        hub = EventHub("s", "sessions/session:s")
        watch = TurnWatch("s", hub.subscribe("t"), "mine", TurnUsage(), "started")
        assert watch.next_event_nowait() is None
        hub.publish(TurnStarted, turn_id=1, text="mine")
        hub.publish(TextDelta, text="a")
        hub.publish(TextDelta, text="b")
        assert isinstance(await watch.next_event(), TurnStarted)
        texts = [event.text for event in iter(watch.next_event_nowait, None)]  # type: ignore[union-attr]  # only text deltas follow, as published above
        assert texts == ["a", "b"]
        hub.publish(TurnFinished, turn_id=1, final_text="ab", reason="completed")
        assert isinstance(watch.next_event_nowait(), TurnFinished)
        assert watch.next_event_nowait() is None and watch.outcome is not None


async def _completion(hub: EventHub, text: str) -> _Completion:
    gateway = ApiGateway(None, ApiServerConfig(), 10, "/")  # type: ignore[arg-type]  # a named session's stream asks no sessions
    gateway.in_flight = 1
    request = CompletionRequest(model="m", stream=True, include_usage=False, system=None, earlier=(), text=text)
    watch = TurnWatch("s", hub.subscribe("t"), text, TurnUsage(), "started")
    return _Completion(gateway, request, watch, Admission(gateway), await gateway.firsts.enter(), ephemeral=False)


def _frames(writes: list[bytes]) -> list[Any]:
    blocks = [block for block in b"".join(writes).decode().split("\n\n") if block]
    return [block[6:] if block == "data: [DONE]" else json.loads(block[6:]) for block in blocks]


class TestCompletionStreamWrites:
    """A streamed completion writes a running turn's text at once, and an ended turn's text with its end."""

    async def test_a_turn_already_ended_is_written_once(self) -> None:
        hub = EventHub("s", "sessions/session:s")
        completion = await _completion(hub, "q")
        hub.publish(TurnStarted, turn_id=1, text="q")
        hub.publish(TextDelta, text="an ")
        hub.publish(TextDelta, text="answer")
        hub.publish(TurnFinished, turn_id=1, final_text="an answer", reason="completed")
        writes: list[bytes] = []

        async def emit(data: bytes) -> None:
            writes.append(data)

        await completion.stream(emit)
        frames = _frames(writes)
        assert len(writes) == 1
        assert [f["choices"][0]["delta"] for f in frames[:-1]] == [
            {"role": "assistant", "content": ""}, {"content": "an answer"}, {}
        ]
        assert frames[-2]["choices"][0]["finish_reason"] == "stop" and frames[-1] == "[DONE]"

    async def test_a_running_turns_text_is_not_held_back(self) -> None:
        hub = EventHub("s", "sessions/session:s")
        completion = await _completion(hub, "q")
        writes: list[bytes] = []

        async def emit(data: bytes) -> None:
            writes.append(data)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(completion.stream, emit)
            hub.publish(TurnStarted, turn_id=1, text="q")
            hub.publish(TextDelta, text="first")
            await trio.testing.wait_all_tasks_blocked()
            assert [f["choices"][0]["delta"] for f in _frames(writes)] == [{"role": "assistant", "content": ""}, {"content": "first"}]
            hub.publish(TurnFinished, turn_id=1, final_text="first", reason="completed")
        assert len(writes) == 2 and _frames(writes)[-1] == "[DONE]"


class TestChunkFrames:
    """A completion's chunk frames, encoded once per stream, are byte for byte the frames built per chunk."""

    @pytest.mark.parametrize("model", ["scripted-model", 'odd"delta":{}model', "modèle ☃"])
    @pytest.mark.parametrize("text", ["plain", 'quotes " and \\ and \n', "unicode é ☃ 𝄞", "", "\u2028"])
    def test_same_bytes(self, model: str, text: str) -> None:
        frames = ChunkFrames("chatcmpl-abc", 1700000000, model)
        assert frames.opening == sse_data(chunk("chatcmpl-abc", 1700000000, model, {"role": "assistant", "content": ""}))
        assert frames.content(text) == sse_data(chunk("chatcmpl-abc", 1700000000, model, {"content": text}))
