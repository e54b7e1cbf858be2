"""A raw client of the sandbox RPC socket and a server to drive it, for the RPC server's tests."""

from __future__ import annotations

import json
import os
from typing import Any

import trio

from actors import Actor
from supervisor import ChildSpec, RestartType, open_actor_system
from actors.sandbox.result import SandboxToolCall
from actors.sandbox.server import RpcServer, bind_listener
from tests.sandbox.helpers import ToolBench

__all__ = ["TOKEN", "Client", "host", "refused_requests", "serve_rpc", "write_until_stalled"]

#: The token every test server expects.
TOKEN = "t0ken-for-tests"


class Client:
    """A raw NDJSON client on the sandbox socket."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.buffer = b""

    async def send(self, payload: dict[str, Any] | bytes) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode() + b"\n"
        await self.stream.send_all(data)

    async def request(self, request_id: int, tool: str, args: dict[str, Any]) -> None:
        await self.send({"type": "RpcRequest", "id": request_id, "tool": tool, "args": args})

    async def receive(self) -> dict[str, Any] | None:
        while b"\n" not in self.buffer:
            try:
                data = await self.stream.receive_some(1 << 16)
            except trio.BrokenResourceError:  # reset: the server closed with our bytes unread
                data = b""
            if not data:
                return None
            self.buffer += data
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)


def refused_requests(count: int) -> bytes:
    """``count`` request frames for a tool scripts may not call, ids 1 to ``count``."""
    return b"".join(
        json.dumps({"type": "RpcRequest", "id": n, "tool": "memory", "args": {}}).encode() + b"\n"
        for n in range(1, count + 1)
    )  # fmt: skip


async def write_until_stalled(client: Client, data: bytes) -> int:
    """Write ``data`` until the server has not read for a second (or all is written); the bytes written."""
    fd = client.stream.socket.fileno()  # non-blocking: a full socket raises rather than waits
    sent = 0
    while sent < len(data):
        try:
            sent += os.write(fd, data[sent : sent + 65536])
        except BlockingIOError:
            with trio.move_on_after(1) as stalled:
                await trio.lowlevel.wait_writable(client.stream.socket)
            if stalled.cancelled_caught:
                break
    return sent


async def serve_rpc(nursery: trio.Nursery, directory: str, bench: ToolBench, **options: Any) -> tuple[str, RpcServer]:
    """An RpcServer on ``directory``/rpc.sock, served in ``nursery``; options override the defaults."""
    path = os.path.join(directory, "rpc.sock")
    records: list[SandboxToolCall] = options.pop("records", [])
    server = RpcServer(
        await bind_listener(path),
        call_tool=options.pop("call_tool", bench.call_tool),
        allowed_tools=options.pop("allowed", frozenset({"read_file", "web_extract", "terminal", "patch"})),
        token=TOKEN,
        max_tool_calls=options.pop("max_tool_calls", 50),
        per_call_timeout=options.pop("per_call_timeout", 30.0),
        gate=bench.gate,
        on_tool_call=options.pop("on_tool_call", records.append),
        **options,
    )
    await nursery.start(host, server)
    return path, server


async def host(actor: Actor[Any], *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
    """Run ``actor`` as ``rpc`` under the root of a private actor system until cancelled."""
    async with open_actor_system() as system:
        await system.root.start_child(ChildSpec("rpc", lambda: actor, restart=RestartType.TEMPORARY))
        task_status.started()
        await trio.sleep_forever()
