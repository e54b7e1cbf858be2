"""The RPC server over a real Unix socket, driven by an in-process client."""

from __future__ import annotations

import json
import os
import socket
import stat
from typing import Any

import pytest
import trio
import trio.testing

from actors.sandbox.result import SandboxToolCall
from actors.sandbox.server import MAX_CONNECTIONS, MAX_REQUEST_BYTES, RpcServer
from tests.sandbox.helpers import ToolBench
from tests.sandbox.rpc_client import TOKEN, Client, serve_rpc
from tools.results import ToolReply

@pytest.fixture
def lagging_clock() -> trio.testing.MockClock:
    """Virtual time that jumps only after 0.1 s of real idleness.

    The tools run partly in worker threads, which an autojump clock does not see: it would jump while a
    call is still on its way.
    """
    return trio.testing.MockClock(autojump_threshold=0.1)


class TestServing:
    """A valid request is answered with the tool's result under the same id."""

    async def test_round_trip_and_record(self, connect, served, bench: ToolBench) -> None:
        path, server, records = served
        client = await connect(path)
        await client.request(7, "read_file", {"path": "a.txt"})
        response = await client.receive()
        assert response["id"] == 7 and response["error"] is None
        assert json.loads(response["result"])["content"] == "contents of a.txt"
        assert server.tool_calls == 1
        assert records[0].tool == "read_file" and records[0].ok and records[0].args_bytes == len('{"path": "a.txt"}')

    async def test_record_reads_ok_not_text(self, connect, short_dir, bench: ToolBench) -> None:
        """The transcript record says what the reply said: a result quoting "error" is ok, a failed
        reply is not, with its reason; the script gets the text either way."""
        replies = {
            "read_file": ToolReply('{"error": "this key is data"}'),
            "patch": ToolReply.failure("old_string was not found in f."),
        }

        async def call_tool(name: str, args: dict[str, Any]) -> ToolReply:
            return replies[name]

        records: list[SandboxToolCall] = []
        async with trio.open_nursery() as nursery:
            path, _ = await serve_rpc(nursery, short_dir, bench, records=records, call_tool=call_tool)
            client = await connect(path)
            await client.request(1, "read_file", {"path": "x"})
            assert (await client.receive())["result"] == '{"error": "this key is data"}'
            await client.request(2, "patch", {"path": "f"})
            assert (await client.receive())["result"] == '{"error": "old_string was not found in f."}'
            nursery.cancel_scope.cancel()
        assert [(r.tool, r.ok, r.error) for r in records] == [
            ("read_file", True, None), ("patch", False, "old_string was not found in f."),
        ]  # fmt: skip

    async def test_socket_is_0600(self, served) -> None:
        path, _, _ = served
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600

    async def test_terminal_is_foreground_only(self, connect, served, bench: ToolBench) -> None:
        path, _, _ = served
        client = await connect(path)
        args = {"command": "sleep 1", "background": True, "pty": True, "notify_on_complete": True,
                "watch_patterns": ["x"], "check_interval": 5}  # fmt: skip
        await client.request(1, "terminal", args)
        response = await client.receive()
        assert json.loads(response["result"])["args"] == ["command"]
        assert bench.calls == [("terminal", {"command": "sleep 1"})]

    async def test_parallel_safe_calls_overlap(self, connect, served, bench: ToolBench, lagging_clock) -> None:
        path, _, _ = served
        client = await connect(path)
        start = trio.current_time()
        for i in range(10):
            await client.request(i + 1, "read_file", {"path": f"f{i}.txt"})
        answers = {(r := await client.receive())["id"]: json.loads(r["result"])["path"] for _ in range(10)}
        assert answers == {i + 1: f"f{i}.txt" for i in range(10)}
        assert bench.running.peak == 8  # the gate's limit
        assert trio.current_time() - start == pytest.approx(0.4)  # two waves of 0.2 s

    async def test_unsafe_calls_run_alone(self, connect, short_dir, bench: ToolBench, lagging_clock) -> None:
        async with trio.open_nursery() as nursery:
            path, _ = await serve_rpc(nursery, short_dir, bench, allowed=frozenset({"write_file", "read_file"}))
            client = await connect(path)
            for i in range(3):
                await client.request(i + 1, "write_file", {"path": f"w{i}", "content": ""})
            for _ in range(3):
                assert (await client.receive())["error"] is None
            assert bench.running.peak == 1
            nursery.cancel_scope.cancel()


class TestRefusals:
    """The seeds' error texts for excluded and unknown tools, the call limit and the per-call timeout."""

    async def test_excluded_tool(self, connect, short_dir, bench: ToolBench) -> None:
        records: list[SandboxToolCall] = []
        async with trio.open_nursery() as nursery:
            path, server = await serve_rpc(nursery, short_dir, bench, records=records)
            client = await connect(path)
            await client.request(1, "vision_analyze", {})
            response = await client.receive()
            assert response["error"] == (
                "Tool 'vision_analyze' is not available in execute_code. Use it as a normal tool call instead. "
                "Available in execute_code: patch, read_file, terminal, web_extract"
            )
            nursery.cancel_scope.cancel()
        # A refusal is recorded by the time the server has stopped (the runner reads records then).
        assert server.tool_calls == 0 and [(r.tool, r.ok) for r in records] == [("vision_analyze", False)]

    async def test_execute_code_is_excluded(self, connect, served) -> None:
        path, _, _ = served
        client = await connect(path)
        await client.request(1, "execute_code", {"code": "print(1)"})
        assert "is not available in execute_code" in (await client.receive())["error"]

    async def test_unknown_tool(self, connect, served) -> None:
        path, _, _ = served
        client = await connect(path)
        await client.request(1, "frobnicate", {})
        assert (await client.receive())["error"] == "Unknown tool: frobnicate. Available: patch, read_file, terminal, web_extract"

    async def test_a_refused_tool_is_refused_whatever_its_arguments(self, connect, short_dir, bench: ToolBench) -> None:
        """The tool's name decides first: arguments that would not type do not turn the refusal into a
        malformed-request error, and the record still measures them. An id that is not an integer does."""
        records: list[SandboxToolCall] = []
        async with trio.open_nursery() as nursery:
            path, _ = await serve_rpc(nursery, short_dir, bench, records=records)
            client = await connect(path)
            await client.send({"type": "RpcRequest", "id": 9, "tool": "vision_analyze", "args": [1, 2]})
            assert (await client.receive())["error"].startswith("Tool 'vision_analyze' is not available")
            await client.send({"type": "RpcRequest", "id": 10, "tool": "frobnicate"})
            assert (await client.receive())["error"].startswith("Unknown tool: frobnicate.")
            await client.send({"type": "RpcRequest", "id": True, "tool": "vision_analyze", "args": {}})
            bad_id = await client.receive()
            assert bad_id["id"] == 0 and bad_id["error"].startswith("Malformed request: invalid RpcRequest message")
            nursery.cancel_scope.cancel()
        assert [(r.tool, r.args_bytes) for r in records] == [("vision_analyze", len("[1, 2]")), ("frobnicate", 4)]

    async def test_call_limit(self, connect, short_dir, bench: ToolBench) -> None:
        async with trio.open_nursery() as nursery:
            path, server = await serve_rpc(nursery, short_dir, bench, max_tool_calls=2)
            client = await connect(path)
            results = []
            for i in range(4):
                await client.request(i, "terminal", {"command": "x"})
                results.append(await client.receive())
            assert [r["error"] for r in results[:2]] == [None, None]
            for r in results[2:]:
                assert r["error"] == "Tool call limit reached (2). No more tool calls allowed in this execution."
            assert server.tool_calls == 2
            nursery.cancel_scope.cancel()

    async def test_per_call_timeout(self, connect, short_dir, bench: ToolBench, lagging_clock) -> None:
        bench.delay = 1000
        async with trio.open_nursery() as nursery:
            path, _ = await serve_rpc(
                nursery, short_dir, bench, per_call_timeout=5, allowed=frozenset({"read_file", "web_search"})
            )
            client = await connect(path)
            start = trio.current_time()
            await client.request(1, "read_file", {"path": "slow"})
            await client.request(2, "web_search", {"query": "fast"})
            first = await client.receive()
            second = await client.receive()
            assert first["id"] == 2 and first["error"] is None  # answered while the slow one still runs
            assert second == {"type": "RpcResponse", "id": 1, "result": None, "error": "Tool call timed out after 5s"}
            assert trio.current_time() - start == pytest.approx(5)
            nursery.cancel_scope.cancel()

    async def test_crashing_tool_path_is_an_error_not_a_crash(self, connect, short_dir, bench: ToolBench, caplog) -> None:
        async def explode(name: str, args: dict[str, Any]) -> ToolReply:
            raise ValueError("token sk-proj-abcdefghijklmnopqrstuvwxyz0123456789 leaked")

        from tools.redact import redact_secrets

        async with trio.open_nursery() as nursery:
            path, _ = await serve_rpc(nursery, short_dir, bench, redact=redact_secrets, call_tool=explode)
            client = await connect(path)
            await client.request(1, "read_file", {"path": "x"})
            response = await client.receive()
            assert response["error"].startswith("Tool 'read_file' failed: ValueError: token [REDACTED]")
            assert "sk-proj" not in caplog.text and "raised" in caplog.text
            await client.request(2, "read_file", {"path": "x"})
            assert (await client.receive())["id"] == 2  # still serving
            nursery.cancel_scope.cancel()


class TestBadInput:
    """Malformed frames and bad credentials get an error response; the server keeps serving."""

    async def test_malformed_frames(self, connect, served, caplog) -> None:
        path, server, _ = served
        client = await connect(path)
        await client.send(b"this is not json\n")
        assert (await client.receive()) == {
            "type": "RpcResponse", "id": 0, "result": None,
            "error": "Malformed request: frame is not valid JSON: Expecting value at column 1",
        }  # fmt: skip
        await client.send(b"\xff\xfe\n")
        assert "not valid UTF-8" in (await client.receive())["error"]
        await client.send({"type": "Nope", "id": 3})
        assert "unknown message type 'Nope'" in (await client.receive())["error"]
        await client.send({"type": "RpcRequest", "id": 4, "tool": "read_file", "args": [1]})
        bad_args = await client.receive()
        assert bad_args["id"] == 4 and "Malformed request: invalid RpcRequest message" in bad_args["error"]
        await client.send({"type": "RpcResponse", "id": 5})
        assert "expected an RpcRequest" in (await client.receive())["error"]
        await client.request(6, "read_file", {"path": "ok"})
        assert (await client.receive())["error"] is None
        assert "malformed request" in caplog.text and server.counters().refused == 5

    async def test_oversized_frame(self, connect, served) -> None:
        path, _, _ = served
        client = await connect(path)
        async with trio.open_nursery() as nursery:
            # Send concurrently: the server answers before it has read the whole flood.
            nursery.start_soon(client.send, b"x" * (MAX_REQUEST_BYTES + 10) + b"\n")
            response = await client.receive()
        assert response["id"] == 0 and "exceeds the limit of 8388608 bytes" in response["error"]
        await client.request(2, "read_file", {"path": "ok"})
        assert (await client.receive())["id"] == 2

    async def test_foreign_uid_refused(self, connect, short_dir, bench: ToolBench) -> None:
        async with trio.open_nursery() as nursery:
            path, server = await serve_rpc(nursery, short_dir, bench, expected_uid=os.getuid() + 4242)
            client = await connect(path)
            response = await client.receive()
            assert "is not the daemon's uid" in response["error"]
            assert await client.receive() is None
            assert server.counters().refused == 1
            nursery.cancel_scope.cancel()

    async def test_client_hanging_up_mid_call(self, connect, served, bench: ToolBench, lagging_clock) -> None:
        path, server, records = served
        client = await connect(path)
        await client.request(1, "read_file", {"path": "x"})
        await client.stream.aclose()
        await trio.sleep(1)
        assert records and records[0].ok  # the call finished; its response had nowhere to go
        again = await connect(path)
        await again.request(2, "read_file", {"path": "y"})
        assert (await again.receive())["id"] == 2


_REQUEST = b'{"type":"RpcRequest","id":1,"tool":"read_file","args":{"path":"x"}}\n'
#: What a foreign client may send as its first bytes, none of which is the token line.
_FOREIGN_OPENINGS = {
    "no token": _REQUEST,
    "a wrong token": b"guess\n" + _REQUEST,
    "a token of the right length, wrong": b"x" * len(TOKEN) + b"\n" + _REQUEST,
    "100,000 [": b"[" * 100_000 + b"\n",
    "a huge integer": b'{"type":"RpcRequest","id":' + b"9" * 100_000 + b',"tool":"read_file","args":{}}\n',
}


class TestFramesAcrossReads:
    """However frames fall into reads, each is answered in order; a malformed one gets a clear error and the
    connection goes on serving."""

    async def test_split_and_packed_frames(self, served, short_dir: str) -> None:
        path, server, _ = served
        stream = await trio.open_unix_socket(path)
        async with stream:
            client = Client(stream)
            valid = b'{"type":"RpcRequest","id":%d,"tool":"read_file","args":{"path":"a"}}\n'
            # The token, a malformed frame and a valid one in one write; then a frame cut in two writes.
            await client.send(TOKEN.encode() + b"\n" + b"{not json\n" + valid % 1)
            await client.send((valid % 2)[:20])
            malformed = await client.receive()
            assert malformed["id"] == 0 and malformed["error"].startswith("Malformed request: frame is not valid JSON")
            assert (await client.receive())["id"] == 1
            await client.send((valid % 2)[20:] + b'{"type":"RpcRequest","id":3,"tool":"memory","args":{}}\n')
            # The refusal is answered at once, the call once its tool returns.
            refused, second = await client.receive(), await client.receive()
            assert refused["id"] == 3 and refused["error"].startswith("Tool 'memory' is not available")
            assert second["id"] == 2 and second["error"] is None
        assert server.counters().tool_calls == 2 and server.counters().refused == 2


class TestHandshake:
    """The token comes first and is checked before anything is decoded; a failed one closes only that connection."""

    @pytest.mark.parametrize("opening", list(_FOREIGN_OPENINGS.values()), ids=list(_FOREIGN_OPENINGS))
    async def test_foreign_client_refused_before_decoding(
        self, opening: bytes, connect, served, bench: ToolBench, caplog
    ) -> None:
        path, server, records = served
        intruder = await connect(path, preamble=b"")
        await intruder.send(opening)
        assert await intruder.receive() == {"type": "RpcResponse", "id": 0, "result": None, "error": "Invalid RPC token"}
        assert await intruder.receive() is None
        assert "refusing connection: Invalid RPC token" in caplog.text
        assert server.tool_calls == 0 and bench.calls == [] and records == []
        owner = await connect(path)
        await owner.request(2, "read_file", {"path": "x"})
        assert (await owner.receive())["error"] is None

    async def test_half_token_times_out(self, connect, served, autojump_clock) -> None:
        path, server, _ = served
        client = await connect(path, preamble=TOKEN[:5].encode())
        start = trio.current_time()
        assert (await client.receive())["error"] == "no RPC token within 5 s"
        assert await client.receive() is None
        assert trio.current_time() - start == pytest.approx(5) and server.counters().refused == 1

    async def test_hang_up_before_the_token(self, connect, served, caplog) -> None:
        path, server, _ = served
        client = await connect(path, preamble=b'{"type":"Rpc')
        await client.stream.aclose()
        owner = await connect(path)
        await owner.request(1, "read_file", {"path": "x"})
        assert (await owner.receive())["id"] == 1
        assert "hung up before presenting the RPC token" in caplog.text and server.counters().refused == 1

    @pytest.mark.parametrize("frame", [b"[" * 100_000 + b"\n", _FOREIGN_OPENINGS["a huge integer"]], ids=["nesting", "integer"])
    async def test_hostile_frame_after_the_token_is_a_bad_frame(self, frame: bytes, connect, served) -> None:
        """The script's own connection: the frame is refused and the connection goes on."""
        path, server, _ = served
        client = await connect(path)
        await client.send(frame)
        refused = await client.receive()
        assert refused["id"] == 0 and refused["error"].startswith("Malformed request")
        await client.request(2, "read_file", {"path": "x"})
        assert (await client.receive())["id"] == 2 and server.tool_calls == 1

    async def test_unforeseen_failure_ends_only_its_connection(self, connect, short_dir, bench: ToolBench, caplog) -> None:
        def broken_record(call: SandboxToolCall) -> None:
            raise KeyError("a bug in the recorder")

        async with trio.open_nursery() as nursery:
            path, server = await serve_rpc(nursery, short_dir, bench, on_tool_call=broken_record)
            first = await connect(path)
            await first.request(1, "read_file", {"path": "x"})
            assert (await first.receive())["error"] == "Internal error in the RPC server; connection closed"
            assert await first.receive() is None
            second = await connect(path)
            await second.request(2, "read_file", {"path": "x"})
            assert (await second.receive())["error"] == "Internal error in the RPC server; connection closed"
            assert "connection failed; closing it" in caplog.text and server.tool_calls == 2
            nursery.cancel_scope.cancel()

    async def test_token_must_be_one_line(self, bench: ToolBench) -> None:
        for token in ("", "two\nlines"):
            with pytest.raises(ValueError, match="non-empty line"), trio.socket.socket(socket.AF_UNIX) as listener:
                RpcServer(
                    listener, call_tool=bench.call_tool, allowed_tools=frozenset(), token=token, max_tool_calls=1,
                    per_call_timeout=1,
                )


class TestConnectionTask:
    """After the token, a task of the server reads the connection: order, stopping and its limit."""

    async def test_a_refusal_waits_behind_a_response_the_socket_could_not_take(
        self, connect, short_dir, bench: ToolBench
    ) -> None:
        async with trio.open_nursery() as nursery:
            path, _ = await serve_rpc(nursery, short_dir, bench, allowed=frozenset({"web_search"}))
            client = await connect(path)
            await client.request(1, "web_search", {"query": "q", "limit": 4096})
            # Its first bytes have arrived, so the rest is queued behind a full socket when the
            # reading task refuses the next request.
            client.buffer += await client.stream.receive_some(1024)
            await client.request(2, "delegate_task", {"goal": "x"})
            await client.send(b"not json\n")
            big, refused, malformed = await client.receive(), await client.receive(), await client.receive()
            assert big["id"] == 1 and len(json.loads(big["result"])["data"]) == 4096 * 1024
            assert refused["id"] == 2 and refused["error"].startswith("Tool 'delegate_task' is not available")
            assert malformed["error"].startswith("Malformed request")
            nursery.cancel_scope.cancel()

    async def test_cancelling_the_server_ends_a_blocked_reader(self, connect, short_dir, bench: ToolBench) -> None:
        records: list[SandboxToolCall] = []
        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                path, server = await serve_rpc(nursery, short_dir, bench, records=records)
                client = await connect(path)
                await client.request(1, "delegate_task", {})
                assert (await client.receive())["id"] == 1
                nursery.cancel_scope.cancel()
        # The reading task was cancelled, the socket closed, the record kept.
        assert await client.receive() is None
        assert [r.tool for r in records] == ["delegate_task"] and server.counters().refused == 1

    async def test_connections_beyond_the_limit_are_refused(self, connect, short_dir, bench: ToolBench) -> None:
        async with trio.open_nursery() as nursery:
            path, server = await serve_rpc(nursery, short_dir, bench)
            clients = [await connect(path) for _ in range(MAX_CONNECTIONS)]
            for number, client in enumerate(clients):
                await client.request(number, "delegate_task", {})
                assert (await client.receive())["id"] == number  # its task reads it
            extra = await connect(path)
            assert (await extra.receive())["error"] == (
                f"too many connections to the RPC server (at most {MAX_CONNECTIONS})"
            )
            assert await extra.receive() is None
            await clients[0].request(99, "read_file", {"path": "x"})
            assert (await clients[0].receive())["id"] == 99
            nursery.cancel_scope.cancel()

needs_root = pytest.mark.skipif(os.getuid() != 0, reason="switching to another uid needs root")
_CONNECT = (
    "import socket, sys\n"
    "s = socket.socket(socket.AF_UNIX)\n"
    "try:\n"
    "    s.connect(sys.argv[1])\n"
    "except OSError as e:\n"
    "    print('connect', type(e).__name__); sys.exit()\n"
    "try:\n"
    "    s.sendall(b'" + TOKEN + "\\n{\"type\":\"RpcRequest\",\"id\":1,\"tool\":\"read_file\",\"args\":{}}\\n')\n"
    "except BrokenPipeError:\n"
    "    pass  # refused before the request went out\n"
    "print(s.recv(4096).decode())\n"
)


@needs_root
class TestSecondUid:
    """Another uid cannot reach the socket, and is refused even where it can."""

    async def _as_nobody(self, path: str) -> str:
        done = await trio.run_process(
            ["python3", "-c", _CONNECT, path], user=65534, capture_stdout=True, cwd="/"
        )
        return done.stdout.decode()

    async def test_private_directory_blocks_other_users(self, served) -> None:
        path, server, _ = served
        assert (await self._as_nobody(path)).strip() == "connect PermissionError"
        assert server.counters().connections == 0

    async def test_peer_uid_checked(self, short_dir: str, bench: ToolBench) -> None:
        os.chmod(short_dir, 0o755)
        async with trio.open_nursery() as nursery:
            path, server = await serve_rpc(nursery, short_dir, bench)
            os.chmod(path, 0o777)  # only the uid check stands between the other user and the tools
            answer = json.loads(await self._as_nobody(path))
            assert answer["error"] == f"peer uid 65534 is not the daemon's uid {os.getuid()}"
            assert server.tool_calls == 0 and bench.calls == []
            nursery.cancel_scope.cancel()


class TestAnsweredAtOnce:
    """A call the session's ``answer_rejected`` answers is answered by the connection at once, counted and recorded."""

    @staticmethod
    async def _reject_empty_paths(name: str, args: dict[str, Any]) -> ToolReply | None:
        if args.get("path") == "":
            return ToolReply.failure("the path is empty")
        if args.get("path") == "boom":
            raise ValueError("the check broke")
        return None

    async def test_answered_while_a_running_call_holds_the_gate(
        self, connect, short_dir, bench: ToolBench, lagging_clock
    ) -> None:
        records: list[SandboxToolCall] = []
        async with trio.open_nursery() as nursery:
            path, server = await serve_rpc(
                nursery, short_dir, bench, allowed=frozenset({"write_file"}), records=records,
                answer_rejected=self._reject_empty_paths,
            )
            client = await connect(path)
            await client.request(1, "write_file", {"path": "w", "content": ""})  # runs alone, for 0.2 s
            await client.request(2, "write_file", {"path": "", "content": ""})
            first, second = await client.receive(), await client.receive()
            assert (first["id"], first["result"], first["error"]) == (2, '{"error": "the path is empty"}', None)
            assert second["id"] == 1 and second["error"] is None
            assert bench.calls == [("write_file", {"path": "w", "content": ""})]
            assert server.tool_calls == 2
            assert [(r.tool, r.ok, r.error) for r in records] == [
                ("write_file", False, "the path is empty"), ("write_file", True, None),
            ]
            nursery.cancel_scope.cancel()

    async def test_a_crashing_answer_is_an_error_not_a_crash(self, connect, short_dir, bench: ToolBench, caplog) -> None:
        async with trio.open_nursery() as nursery:
            path, _ = await serve_rpc(
                nursery, short_dir, bench, allowed=frozenset({"write_file"}), answer_rejected=self._reject_empty_paths,
            )
            client = await connect(path)
            await client.request(1, "write_file", {"path": "boom", "content": ""})
            response = await client.receive()
            assert response["error"] == "Tool 'write_file' failed: ValueError: the check broke"
            assert "raised" in caplog.text
            await client.request(2, "write_file", {"path": "", "content": ""})
            assert (await client.receive())["id"] == 2  # still serving
            nursery.cancel_scope.cancel()
