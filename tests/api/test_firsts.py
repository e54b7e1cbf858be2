"""First tokens before tails: slots in arrival order, a slot given back at its deadline, tails deferred
within a bound, never starved, chunks in order."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import openai
import pytest
import trio
import trio.testing

from actors.platform.api.completions import _Completion
from actors.platform.api.firsts import SLOTS, FirstTokens, Ticket
from actors.platform.api.gateway import Admission, ApiGateway
from actors.platform.api.sse import SseResponse
from actors.platform.api.turns import TurnWatch
from actors.platform.api.wire import CompletionRequest, TurnUsage
from actors.session.hub import EventHub
from config.api import ApiServerConfig
from actors.session.llm import LlmCall
from messages.events import ReasoningDelta, TextDelta, TurnFinished, TurnStarted
from tests.api.harness import ApiDaemon, wait_until
from tests.session.harness import open_harness, run_turn

DEFER = 0.25


class _Stream:
    """A named session's streamed completion of turn 1 ("q") on a hub of its own, gated by ``firsts``;
    what it writes, and when it ended."""

    def __init__(self, firsts: FirstTokens) -> None:
        self.firsts = firsts
        self.hub = EventHub("s", "sessions/session:s")
        self.writes: list[bytes] = []
        self.done_at: list[float] = []

    async def open(self) -> _Completion:
        gateway = ApiGateway(None, ApiServerConfig(), 10, "/")  # type: ignore[arg-type]  # a named session's stream asks no sessions
        gateway.firsts = self.firsts
        gateway.in_flight = 1
        request = CompletionRequest(model="m", stream=True, include_usage=False, system=None, earlier=(), text="q")
        watch = TurnWatch("s", self.hub.subscribe("t"), "q", TurnUsage(), "started")
        self.completion = _Completion(gateway, request, watch, Admission(gateway), await self.firsts.enter(), ephemeral=False)
        return self.completion

    async def emit(self, data: bytes) -> None:
        self.writes.append(data)

    async def run(self) -> None:
        await self.completion.stream(self.emit)
        self.done_at.append(trio.current_time())

    def publish(self, *texts: str, end: bool = False) -> None:
        """The turn's start (before the first text), its texts, and (``end``) its finish."""
        if not self.hub.seq:
            self.hub.publish(TurnStarted, turn_id=1, text="q")
        for text in texts:
            self.hub.publish(TextDelta, text=text)
        if end:
            self.hub.publish(TurnFinished, turn_id=1, final_text="", reason="completed")


def _texts(writes: list[bytes]) -> list[str]:
    """The content of each chunk written, in order (the role chunk and the end left out)."""
    blocks = [block[6:] for block in b"".join(writes).decode().split("\n\n") if block and block != "data: [DONE]"]
    deltas = [json.loads(block)["choices"][0]["delta"] for block in blocks]
    return [delta["content"] for delta in deltas if delta.get("content")]


async def _busy(steps: int = 5) -> None:
    """Let the other tasks run while this one stays runnable: the loop is never idle."""
    for _ in range(steps):
        await trio.lowlevel.checkpoint()


class TestSlots:
    """Requests beyond the slots wait and get theirs in arrival order; the queue's head takes one more
    whenever the loop is idle."""

    async def test_arrival_order(self) -> None:
        firsts = FirstTokens(slots=2)
        held = [await firsts.enter(), await firsts.enter()]
        got: list[tuple[str, Ticket]] = []

        async def enter(name: str) -> None:
            got.append((name, await firsts.enter()))

        async with trio.open_nursery() as nursery:
            for name in "abc":
                nursery.start_soon(enter, name)
                await _busy()
            assert got == [] and firsts.waiting == 5
            held.pop().passed()
            await _busy()
            assert [name for name, _ in got] == ["a"]
            held.pop().passed()
            await _busy()
            got[0][1].passed()
            got[0][1].passed()  # idempotent: frees one slot, not two
            await _busy()
            assert [name for name, _ in got] == ["a", "b", "c"]
        assert firsts.waiting == 2

    async def test_an_idle_loop_admits_the_head(self) -> None:
        firsts = FirstTokens(slots=1)
        held = await firsts.enter()
        got: list[str] = []

        async def enter(name: str) -> None:
            await firsts.enter()
            got.append(name)

        async with trio.open_nursery() as nursery:
            for name in "ab":
                nursery.start_soon(enter, name)
                await _busy()
            assert got == []
            await trio.testing.wait_all_tasks_blocked()
        assert got == ["a", "b"] and firsts.waiting == 3
        held.passed()
        assert firsts.waiting == 2

    async def test_cancelled_wait_is_not_counted(self) -> None:
        firsts = FirstTokens(slots=1)
        held = await firsts.enter()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(firsts.enter)
            await _busy()
            assert firsts.waiting == 2
            nursery.cancel_scope.cancel()
        assert firsts.waiting == 1
        held.passed()
        (await firsts.enter()).passed()  # the slot is free again: no wait
        assert firsts.waiting == 0


class TestHold:
    """A completion whose first token has not come by its deadline gives its slot back and keeps waiting."""

    async def test_slow_provider_frees_the_slot(self, mock_clock: trio.testing.MockClock) -> None:
        stream = _Stream(FirstTokens(slots=1, hold=0.05))
        completion = await stream.open()
        got: list[Ticket] = []

        async def enter() -> None:
            got.append(await stream.firsts.enter())

        async with trio.open_nursery() as nursery:
            nursery.start_soon(stream.run)
            nursery.start_soon(enter)
            while not got:
                mock_clock.jump(0.01)
                await _busy(1)
            assert completion.ticket.done and 0.05 <= trio.current_time() <= 0.07
            got[0].passed()
            stream.publish("late", end=True)
        assert _texts(stream.writes) == ["late"]
        assert stream.firsts.waiting == 0


class TestTail:
    """After its first token a stream waits while another request is before its first token: until the
    loop is idle, at most ``defer`` seconds."""

    async def test_deferred_while_a_first_is_pending(self, mock_clock: trio.testing.MockClock) -> None:
        stream = _Stream(FirstTokens(slots=2, defer=DEFER))
        await stream.open()
        pending = await stream.firsts.enter()  # another request, before its first token
        async with trio.open_nursery() as nursery:
            nursery.start_soon(stream.run)
            stream.publish("one")
            # Keep the loop busy (never idle) while virtual time passes: only the bound lets the tail go.
            while not stream.writes:
                await trio.lowlevel.checkpoint()
            stream.publish("two", end=True)
            while not stream.done_at:
                assert len(stream.writes) == 1, "the tail went before the bound"
                mock_clock.jump(0.01)
                await trio.lowlevel.checkpoint()
        pending.passed()
        assert DEFER <= stream.done_at[0] <= DEFER + 0.02
        assert _texts(stream.writes) == ["one", "two"]

    async def test_let_go_after_other_first_tokens(self, mock_clock: trio.testing.MockClock) -> None:
        """The bound the machine's load cannot stretch: ``defer_passes`` first tokens, no time passing."""
        stream = _Stream(FirstTokens(slots=8, defer=DEFER, defer_passes=3))
        await stream.open()
        pending = await stream.firsts.enter()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(stream.run)
            stream.publish("one")
            while not stream.writes:
                await _busy(1)
            stream.publish("two", end=True)
            for _ in range(3):
                await _busy()
                assert len(stream.writes) == 1, "the tail went before the bound"
                (await stream.firsts.enter()).passed()
            await _busy()
            assert stream.done_at == [0]
        pending.passed()
        assert _texts(stream.writes) == ["one", "two"]

    async def test_an_idle_loop_lets_it_go(self, autojump_clock: trio.testing.MockClock) -> None:
        stream = _Stream(FirstTokens(slots=2, defer=DEFER))
        await stream.open()
        pending = await stream.firsts.enter()
        stream.publish("one")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(stream.run)
            await trio.testing.wait_all_tasks_blocked()
            stream.publish("two", end=True)
        pending.passed()
        assert stream.done_at == [0]  # nothing waited for the bound: the loop had nothing else to run
        assert _texts(stream.writes) == ["one", "two"]

    async def test_an_idle_loop_lets_one_tail_go_at_a_time(self, autojump_clock: trio.testing.MockClock) -> None:
        """The oldest tail first, and the next only when the loop is idle again: letting every tail go at
        once would put all their work before the next first tokens."""
        firsts = FirstTokens(slots=2, defer=DEFER)
        pending = await firsts.enter()
        order: list[str] = []

        async def tail(name: str) -> None:
            await firsts.tail()
            order.append(f"{name} out")
            await _busy(20)
            order.append(f"{name} done")

        async with trio.open_nursery() as nursery:
            for name in ("a", "b", "c"):
                nursery.start_soon(tail, name)
                await trio.lowlevel.checkpoint()
        pending.passed()
        assert order == ["a out", "a done", "b out", "b done", "c out", "c done"]
        assert trio.current_time() == 0  # every one went at an idle moment, none by the bound

    async def test_cancelled_while_deferred(self, mock_clock: trio.testing.MockClock) -> None:
        """A client leaving while its tail waits: the stream stops at once and frees its admission."""
        stream = _Stream(FirstTokens(slots=2, defer=DEFER))
        completion = await stream.open()
        pending = await stream.firsts.enter()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(stream.run)
            stream.publish("one")
            while not stream.writes:
                await trio.lowlevel.checkpoint()
            nursery.cancel_scope.cancel()
        pending.passed()
        assert trio.current_time() == 0 and not stream.done_at
        assert completion.gateway.in_flight == 0 and stream.firsts.waiting == 0
        assert stream.hub.subscriber_count == 0


class TestFlood:
    """Under a continuous flood of new requests, an old stream still completes within its bound."""

    async def test_old_stream_completes(self, mock_clock: trio.testing.MockClock) -> None:
        stream = _Stream(FirstTokens(slots=4, hold=0.05, defer=DEFER))
        await stream.open()
        words = [f"w{i} " for i in range(20)]
        admitted = 0

        async def turn() -> None:
            for word in words:
                stream.publish(word)
                await trio.sleep(0.01)
            stream.publish(end=True)

        async def request() -> None:
            # A new request: a slot, some work before its first token, then its first token.
            nonlocal admitted
            ticket = await stream.firsts.enter()
            admitted += 1
            await trio.sleep(0.005)
            ticket.passed()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(stream.run)
            nursery.start_soon(turn)
            while not stream.done_at:
                # New requests keep coming, more than the slots serve: some always wait for their first token.
                for _ in range(8):
                    nursery.start_soon(request)
                mock_clock.jump(0.001)
                await trio.lowlevel.checkpoint()
                assert trio.current_time() < 10, "the old stream starved"
            nursery.cancel_scope.cancel()
        # The turn took 0.2 s; the stream's one deferral adds at most DEFER (and the clock's steps).
        assert stream.done_at[0] <= 0.2 + DEFER + 0.05
        assert admitted > 100
        assert "".join(_texts(stream.writes)) == "".join(words)


class TestAnswerPace:
    """A provider call waits at the daemon's pace once: right after its answer's first text is published."""

    async def test_once_after_the_first_text(self) -> None:
        hub = EventHub("s", "sessions/session:s")
        published: list[str] = []
        paced: list[list[str]] = []
        sub = hub.subscribe("t")

        async def pace() -> None:
            while (event := sub.receive_nowait()) is not None:
                published.append(getattr(event, "text", ""))
            paced.append(list(published))

        call = LlmCall(
            None, chain=None, connector=None, pools={}, retry=None, hub=hub, approx_tokens=0,  # type: ignore[arg-type]  # only the events are fed
            context_length=len, pace=pace,
        )
        await call._on_event(ReasoningDelta(text="thinking"))
        assert paced == []
        for text in ("first", " second", " third"):
            await call._on_event(TextDelta(text=text))
        assert paced == [["thinking", "first"]]


class TestBurstThroughTheApi:
    """A burst larger than the slots, through the daemon with the openai SDK: every stream gets its whole
    answer in order, and the gate is left empty (the sessions' provider calls paced by the same gate)."""

    async def test_every_stream_whole(self, api: ApiDaemon) -> None:
        words = " ".join(f"w{i}" for i in range(12))
        n = 10  # max_concurrent_runs' default; more than the slots
        assert n > SLOTS
        api.provider.push(*[{"text": words}] * n)
        texts: list[str] = []

        async def one(client: openai.AsyncOpenAI) -> None:
            stream = await client.chat.completions.create(
                model="scripted-model", messages=[{"role": "user", "content": "go"}], stream=True
            )
            texts.append("".join([c.choices[0].delta.content or "" async for c in stream if c.choices]))

        async with api.client() as client:
            async with trio.open_nursery() as nursery:
                for _ in range(n):
                    nursery.start_soon(one, client)
        assert texts == [words] * n
        gateway = api.api_actor()._actor.gateway
        await wait_until(lambda: not api.session_paths())
        assert (gateway.in_flight, gateway.firsts.waiting, gateway.firsts.passes) == (0, 0, n)
        assert gateway.sessions.deps.pace == gateway.firsts.tail


class TestAfterTheResponse:
    """A stream's teardown runs once its response has ended (the client does not wait for it), and runs
    even when the response never reached its stream."""

    async def test_after_runs_once_the_end_is_sent(self) -> None:
        sent: list[Any] = []
        seen_at_after: list[int] = []

        async def producer(emit: Any) -> None:
            await emit(b"data: x\n\n")

        async def after() -> None:
            seen_at_after.append(len(sent))

        async def send(message: Any) -> None:
            sent.append(message)

        async def receive() -> Any:
            await trio.sleep_forever()

        await SseResponse(producer, after=after)({}, receive, send)
        assert sent[-1] == {"type": "http.response.body", "body": b"", "more_body": False}
        assert seen_at_after == [len(sent)]

        async def failing(emit: Any) -> None:
            raise RuntimeError("producer failed")

        with pytest.raises(ExceptionGroup) as raised:  # from the response's nursery
            await SseResponse(failing, after=after)({}, receive, send)
        assert raised.group_contains(RuntimeError, match="producer failed")
        assert len(seen_at_after) == 2

    async def test_a_stream_never_begun_still_ends(self) -> None:
        stream = _Stream(FirstTokens(slots=2))
        completion = await stream.open()
        await completion.close_later()
        assert (completion.gateway.in_flight, stream.firsts.waiting, stream.hub.subscriber_count) == (0, 0, 0)


class TestOnlyApiSessionsKeepThePace:
    """The daemon's pace holds back the rest of an API completion's answer, never an interactive
    session's: a CLI session's turn is never paced, an API session's provider call once."""

    @pytest.mark.parametrize(("source", "expected"), [("cli", 0), ("telegram", 0), ("api", 1)])
    async def test_paced_by_source(self, tmp_path: Path, source: str, expected: int) -> None:
        paced: list[str] = []

        async def pace() -> None:
            paced.append(source)

        async with open_harness(tmp_path) as h:
            h.deps = attrs.evolve(h.deps, pace=pace)
            handle, events, _ = await h.start_session(source=source)
            h.provider.push({"text": "one two three", "chunks": 3})
            finished, _ = await run_turn(handle, events, "go")
            assert finished.final_text == "one two three"
        assert len(paced) == expected
