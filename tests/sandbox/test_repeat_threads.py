"""A failing call a script makes again unchanged, answered by its connection's thread for the session: counted
and recorded on the event loop in order, before any other call reaches the session, and when the run is cancelled."""

from __future__ import annotations

import json
from typing import Any

import trio
import trio.testing

from actors.sandbox.result import SandboxToolCall
from tests.sandbox.helpers import ToolBench
from tests.sandbox.rpc_client import Client, serve_rpc
from tools.results import ToolReply

FAILING = {"path": "", "content": "x"}


class _Session:
    """The session's side: rejects write_file without a path at once, and tells its answers made again."""

    def __init__(self) -> None:
        self.log: list[tuple[str, Any]] = []

    async def answer_rejected(self, name: str, args: dict[str, Any]) -> ToolReply | None:
        if name != "write_file" or args.get("path"):
            return None
        self.log.append(("at once", args["content"]))
        return ToolReply.failure("no path")

    def repeat_rejected(self, name: str, args: dict[str, Any]) -> _Again:
        return _Again(self.log, args["content"])


class _Again:
    """Answers a call made again with its number in the run of repeats; records it in the session's log."""

    error = "no path"

    def __init__(self, log: list[tuple[str, Any]], content: str) -> None:
        self._log = log
        self._content = content

    def text(self, repeat: int) -> str | None:
        return json.dumps({"error": "no path", "repeat": repeat, "content": self._content})

    def record(self, text: str, duration: float) -> None:
        self._log.append(("again", json.loads(text)["content"]))


async def _call(client: Client, request_id: int, args: dict[str, Any]) -> dict[str, Any]:
    await client.request(request_id, "write_file", args)
    answer = await client.receive()
    assert answer is not None and answer["id"] == request_id
    return answer


class TestAnsweredByTheThread:
    """From the second call made again, the thread answers; the loop counts and records each call once, in order."""

    async def test_another_connections_call_waits_for_the_threads_records(self, connect, short_dir, bench: ToolBench) -> None:
        session = _Session()
        records: list[SandboxToolCall] = []
        async with trio.open_nursery() as nursery:
            path, server = await serve_rpc(
                nursery, short_dir, bench, records=records, allowed=frozenset({"write_file", "read_file"}),
                answer_rejected=session.answer_rejected, repeat_rejected=session.repeat_rejected,
            )
            first, second = await connect(path), await connect(path)
            answers = [await _call(first, n, FAILING) for n in range(1, 11)]
            # Two on the loop, then the thread: the session's answers to the calls made again, numbered.
            assert [json.loads(a["result"]).get("repeat") for a in answers] == [None, None, *range(1, 9)]
            assert session.log == [("at once", "x")] * 2  # the thread's calls not recorded yet
            assert server.tool_calls == 10
            await trio.testing.wait_all_tasks_blocked()
            other = await _call(second, 1, {"path": "", "content": "y"})
            assert json.loads(other["result"]) == {"error": "no path"}
            # The thread's calls were recorded before the other connection's call reached the session.
            assert session.log == [("at once", "x")] * 2 + [("again", "x")] * 8 + [("at once", "y")]
            assert [r.ok for r in records] == [False] * 11 and {r.error for r in records} == {"no path"}
            assert [r.args_bytes for r in records[:10]] == [len(json.dumps(FAILING, ensure_ascii=False))] * 10
            # The first connection goes on as before.
            assert json.loads((await _call(first, 11, FAILING))["result"]).get("repeat") in (None, 1)
            assert server.tool_calls == 12
            nursery.cancel_scope.cancel()

    async def test_recorded_when_cancelled_and_within_the_call_limit(self, connect, short_dir, bench: ToolBench) -> None:
        session = _Session()
        records: list[SandboxToolCall] = []
        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                path, server = await serve_rpc(
                    nursery, short_dir, bench, records=records, allowed=frozenset({"write_file"}), max_tool_calls=20,
                    answer_rejected=session.answer_rejected, repeat_rejected=session.repeat_rejected,
                )
                client = await connect(path)
                answers = [await _call(client, n, FAILING) for n in range(1, 23)]
                await trio.testing.wait_all_tasks_blocked()
                nursery.cancel_scope.cancel()
        assert [json.loads(a["result"]).get("repeat") for a in answers[:20]] == [None, None, *range(1, 19)]
        assert [a["error"] for a in answers[20:]] == ["Tool call limit reached (20). No more tool calls allowed in this execution."] * 2
        assert session.log == [("at once", "x")] * 2 + [("again", "x")] * 18
        assert len(records) == 22 and server.tool_calls == 20
