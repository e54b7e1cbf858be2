"""What a hostile script can make the RPC server hold: each bounded, whatever the script does."""

from __future__ import annotations

import json

import pytest
import trio
import trio.testing

import actors.sandbox.server as server_module
from actors.sandbox.result import SandboxToolCall
from tests.sandbox.helpers import ToolBench
from tests.sandbox.rpc_client import refused_requests, serve_rpc, write_until_stalled


class TestBounds:
    """Refusal records, queued answers, log lines and open connections per run."""

    async def test_refusals_beyond_the_record_limit_are_counted_not_kept(
        self, connect, short_dir, bench: ToolBench, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A script looping on refused calls cannot grow the daemon's memory: past the limit only a count grows."""
        monkeypatch.setattr(server_module, "MAX_RECORDED_REFUSALS", 3)
        records: list[SandboxToolCall] = []
        async with trio.open_nursery() as nursery:
            path, server = await serve_rpc(nursery, short_dir, bench, records=records)
            client = await connect(path)
            for request_id in range(1, 6):
                await client.request(request_id, "vision_analyze", {"image": "x" * request_id})
                assert (await client.receive())["id"] == request_id
            nursery.cancel_scope.cancel()
        sizes = [len(json.dumps({"image": "x" * n})) for n in (1, 2, 3)]
        assert [(r.tool, r.args_bytes) for r in records] == [("vision_analyze", size) for size in sizes]
        assert server.counters().refused == 5 and server.counters().unrecorded == 2

    async def test_a_flood_of_malformed_frames_cannot_flood_the_log(
        self, connect, short_dir, bench: ToolBench, caplog: pytest.LogCaptureFixture
    ) -> None:
        """Each gets its answer; the log gets the first few, cut short, and one line counting the rest."""
        frames = [json.dumps({"type": "X" * 5000, "id": n}).encode() + b"\n" for n in range(1, 201)]
        async with trio.open_nursery() as nursery:
            path, server = await serve_rpc(nursery, short_dir, bench)
            client = await connect(path)
            async with trio.open_nursery() as sending:
                sending.start_soon(client.send, b"".join(frames))
                answers = [await client.receive() for _ in frames]
            nursery.cancel_scope.cancel()
        assert all(answer["error"].startswith("Malformed request: unknown message type") for answer in answers)
        lines = [r.getMessage() for r in caplog.records if "malformed request" in r.getMessage()]
        assert len(lines) == server_module.MAX_LOGGED_REJECTIONS + 1
        assert max(len(line) for line in lines) < server_module.LOGGED_ERROR_CHARS + 100
        unlogged = 200 - server_module.MAX_LOGGED_REJECTIONS
        assert lines[-1] == f"sandbox RPC: {unlogged} more malformed requests and refused connections, not logged"

    async def test_a_script_that_never_reads_its_answers_stops_being_read(self, connect, served) -> None:
        """The daemon holds no answers for a script that only writes beyond what the socket takes: it stops
        reading its requests, and every answer still arrives, in order, once the script reads."""
        path, _, _ = served
        client = await connect(path)
        count = 30_000
        requests = refused_requests(count)
        sent = await write_until_stalled(client, requests)
        # Stopped within the socket buffers and the queue limit, far short of 2 MB of requests.
        assert sent < len(requests) // 2

        async def send_the_rest() -> None:
            await client.stream.send_all(requests[sent:])

        async with trio.open_nursery() as nursery:
            nursery.start_soon(send_the_rest)
            ids = [(await client.receive())["id"] for _ in range(count)]
        assert ids == list(range(1, count + 1))

    async def test_cancelling_the_server_ends_a_reader_waiting_for_room(self, connect, short_dir, bench: ToolBench) -> None:
        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                path, _ = await serve_rpc(nursery, short_dir, bench)
                client = await connect(path)
                await write_until_stalled(client, refused_requests(30_000))
                nursery.cancel_scope.cancel()

    async def test_connections_that_never_present_the_token_hold_a_bounded_number_of_descriptors(
        self, connect, short_dir, bench: ToolBench, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Past MAX_OPEN_CONNECTIONS the server accepts nothing until one closes; then it serves the rest."""
        monkeypatch.setattr(server_module, "MAX_OPEN_CONNECTIONS", 4)
        async with trio.open_nursery() as nursery:
            path, server = await serve_rpc(nursery, short_dir, bench)
            silent = [await connect(path, preamble=b"") for _ in range(10)]
            await trio.testing.wait_all_tasks_blocked()
            assert server.counters().connections == 4
            for client in silent:
                await client.stream.aclose()
            client = await connect(path)
            await client.request(1, "read_file", {"path": "x"})
            assert (await client.receive())["id"] == 1
            assert server.counters().connections == 11
            nursery.cancel_scope.cancel()
