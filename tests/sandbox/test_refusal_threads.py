"""A run of refused calls answered by a thread of the connection's own: off the event loop, every answer and
record as on it, and nothing left running when the run is cancelled."""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest
import trio

import actors.sandbox.readers as readers_module
from actors.sandbox.readers import REFUSALS_BEFORE_THREAD, RefusalReader, RefusedCall
from actors.sandbox.refusals import ToolRefusals
from actors.sandbox.result import SandboxToolCall
from messages.codec import Codec
from messages.rpc import RpcMessage
from tests.sandbox.helpers import ToolBench
from tests.sandbox.rpc_client import Client, serve_rpc

CODEC: Codec[RpcMessage] = Codec(RpcMessage)
UNAVAILABLE = "Tool 'memory' is not available in execute_code."


def _frame(request_id: int, tool: str = "memory", args: dict[str, Any] | None = None) -> bytes:
    return json.dumps({"type": "RpcRequest", "id": request_id, "tool": tool, "args": args or {}}).encode() + b"\n"


class _StepsOfOthers(trio.abc.Instrument):
    """Counts the task steps of every task but the one that created it (the test's own: the client)."""

    def __init__(self) -> None:
        self.client = trio.lowlevel.current_task()
        self.steps = 0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        if task is not self.client:
            self.steps += 1


async def _round_trips(client: Client, ids: range) -> list[dict[str, Any]]:
    answers = []
    for request_id in ids:
        await client.request(request_id, "memory", {"n": request_id})
        answers.append(await client.receive())
    return answers


class TestOffTheEventLoop:
    """The event loop takes no step per refused call once a run of them is read by a thread."""

    async def test_a_run_of_refusals_costs_the_loop_no_step_per_call(self, connect, served) -> None:
        path, server, records = served
        client = await connect(path)
        await _round_trips(client, range(1, REFUSALS_BEFORE_THREAD + 1))
        steps = _StepsOfOthers()
        trio.lowlevel.add_instrument(steps)
        try:
            answers = await _round_trips(client, range(REFUSALS_BEFORE_THREAD + 1, 301))
        finally:
            trio.lowlevel.remove_instrument(steps)
        # On the event loop each call is a step of the connection's task: 298 here. A thread hands back its
        # calls every MAX_REFUSALS_PER_TRIP, a few steps each.
        assert steps.steps < 30, steps.steps
        assert [a["id"] for a in answers] == list(range(REFUSALS_BEFORE_THREAD + 1, 301))
        assert all(a["error"].startswith(UNAVAILABLE) and a["result"] is None for a in answers)
        await client.request(301, "read_file", {"path": "a.txt"})
        assert json.loads((await client.receive())["result"])["content"] == "contents of a.txt"
        assert [r.tool for r in records] == ["memory"] * 300 + ["read_file"]
        assert [r.args_bytes for r in records[:300]] == [len(json.dumps({"n": n})) for n in range(1, 301)]
        assert server.counters().refused == 300 and server.tool_calls == 1


class TestSameAnswersAndRecords:
    """Whatever follows a run of refusals is answered by the event loop as before, in order."""

    async def test_allowed_malformed_partial_and_pipelined_frames(
        self, connect, served, caplog: pytest.LogCaptureFixture
    ) -> None:
        path, server, records = served
        client = await connect(path)
        await _round_trips(client, range(1, 4))
        await client.send(_frame(4, "read_file", {"path": "a.txt"}))
        assert json.loads((await client.receive())["result"])["content"] == "contents of a.txt"
        await _round_trips(client, range(5, 8))
        await client.send(b'{"type": "RpcRequest", "id": 8, "tool": "memory", "args": \n')
        assert (await client.receive())["error"].startswith("Malformed request:")
        await _round_trips(client, range(9, 12))
        half = _frame(12)
        await client.send(half[:20])
        await trio.testing.wait_all_tasks_blocked()
        await client.send(half[20:])
        assert (await client.receive())["id"] == 12
        await _round_trips(client, range(13, 16))
        await client.send(_frame(16) + _frame(17, "read_file", {"path": "a.txt"}) + _frame(18))
        # An admitted call runs as a job: the refusal after it may be answered (and recorded) first.
        answers = {a["id"]: a for a in [await client.receive() for _ in range(3)]}
        assert answers[16]["error"].startswith(UNAVAILABLE) and answers[18]["error"].startswith(UNAVAILABLE)
        assert json.loads(answers[17]["result"])["content"] == "contents of a.txt"
        expected = ["memory"] * 3 + ["read_file"] + ["memory"] * 3 + ["memory"] * 3 + ["memory"] * 4
        assert [r.tool for r in records[:14]] == expected
        assert sorted(r.tool for r in records[14:]) == ["memory", "memory", "read_file"]
        assert any("malformed request" in r.getMessage() for r in caplog.records)
        assert server.counters().refused == 18 - 2  # the two read_file calls are dispatched


class TestCancelled:
    """Cancelling the run ends the thread's wait; every refusal it answered is recorded."""

    async def test_cancelled_while_the_thread_waits_for_the_next_call(self, connect, short_dir, bench: ToolBench) -> None:
        records: list[SandboxToolCall] = []
        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                path, server = await serve_rpc(nursery, short_dir, bench, records=records)
                client = await connect(path)
                await _round_trips(client, range(1, 41))
                await trio.testing.wait_all_tasks_blocked()
                nursery.cancel_scope.cancel()
        assert [r.tool for r in records] == ["memory"] * 40
        assert server.counters().refused == 40


class TestRefusalReader:
    """The thread's reader alone, on a socket pair."""

    @staticmethod
    def _reader(sock: socket.socket) -> RefusalReader:
        return RefusalReader(trio.socket.from_stdlib_socket(sock), CODEC, ToolRefusals(CODEC, frozenset({"read_file"}), frozenset()))

    async def test_stopped_while_waiting_for_room_to_answer(self) -> None:
        """A script that never reads its answers leaves the thread waiting to write; stop() ends that wait."""
        ours, theirs = socket.socketpair()
        ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        with ours, theirs:
            reader = self._reader(ours)
            tool = "x" * 30_000  # its answer names it: far more than the socket takes
            theirs.sendall(_frame(1, tool))
            async with trio.open_nursery() as nursery:
                handed: list[bytes | None] = []

                async def read() -> None:
                    handed.append(await trio.to_thread.run_sync(reader.read))

                nursery.start_soon(read)
                await trio.lowlevel.wait_readable(theirs)  # the answer's first bytes: the rest waits for room
                reader.stop()
            assert handed == [b""]
            assert reader.answered == [RefusedCall(tool, {}, f"Unknown tool: {tool}. Available: read_file")]

    async def test_hands_back_what_it_does_not_answer(self) -> None:
        ours, theirs = socket.socketpair()
        with ours, theirs:
            for data in (_frame(1, "read_file"), _frame(2) + _frame(3), _frame(4)[:-3], b"{]\n"):
                reader = self._reader(ours)
                theirs.sendall(data)
                assert await trio.to_thread.run_sync(reader.read) == data
                assert reader.answered == []

    async def test_returns_after_a_trip_of_refusals(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(readers_module, "MAX_REFUSALS_PER_TRIP", 3)
        ours, theirs = socket.socketpair()
        with ours, theirs:
            reader = self._reader(ours)

            async def ask() -> None:
                for request_id in range(1, 4):
                    await trio.to_thread.run_sync(theirs.sendall, _frame(request_id))
                    answer = json.loads(await trio.to_thread.run_sync(theirs.recv, 65536))
                    assert answer["id"] == request_id

            async with trio.open_nursery() as nursery:
                nursery.start_soon(ask)
                assert await trio.to_thread.run_sync(reader.read) is None
            assert [call.tool for call in reader.answered] == ["memory"] * 3
