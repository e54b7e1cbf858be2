"""The RPC server actor outlives a process out of file descriptors: the connection waits, then is served."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

#: Run in a child process of its own: it lowers its descriptor limit and uses up every descriptor.
_CHILD = textwrap.dedent('''
    import errno, json, logging, os, resource, socket, sys
    import trio
    from actors.sandbox.server import RpcServer, bind_listener
    from tests.sandbox.rpc_client import host
    from tools.results import ToolReply

    class Seen(logging.Handler):
        def __init__(self):
            super().__init__()
            self.messages = []
        def emit(self, record):
            self.messages.append(record.getMessage())

    async def call_tool(name, args):
        return ToolReply(json.dumps({"content": "served"}))

    async def main(directory):
        seen = Seen()
        logging.getLogger("trio.serve_listeners").addHandler(seen)
        path = os.path.join(directory, "rpc.sock")
        server = RpcServer(await bind_listener(path), call_tool=call_tool, allowed_tools=frozenset({"read_file"}),
                           token="tok", max_tool_calls=5, per_call_timeout=10.0)
        async with trio.open_nursery() as nursery:
            await nursery.start(host, server)
            client = trio.socket.socket(socket.AF_UNIX)  # made while a descriptor is still free
            hog = []
            try:
                while True:
                    hog.append(os.open(os.devnull, os.O_RDONLY))
            except OSError as exc:
                assert exc.errno == errno.EMFILE, exc
            await client.connect(path)  # queued in the backlog: the server's accept now fails
            with trio.fail_after(10):
                while not any("accept returned" in message for message in seen.messages):
                    await trio.sleep(0.01)
            for fd in hog:
                os.close(fd)
            stream = trio.SocketStream(client)
            request = {"type": "RpcRequest", "id": 1, "tool": "read_file", "args": {"path": "a"}}
            await stream.send_all(b"tok\\n" + json.dumps(request).encode() + b"\\n")
            received = b""
            with trio.fail_after(10):
                while not received.endswith(b"\\n"):
                    received += await stream.receive_some(65536)
            print(received.decode().strip())
            print(seen.messages[0])
            nursery.cancel_scope.cancel()

    resource.setrlimit(resource.RLIMIT_NOFILE, (128, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    trio.run(main, sys.argv[1])
''')


class TestOutOfDescriptors:
    """Accepting while the process has no descriptor left waits and retries; the script's call is then served."""

    def test_served_after_emfile(self, short_dir: str) -> None:
        """The connection that arrived during the shortage is answered once descriptors are free again."""
        root = Path(__file__).resolve().parents[2]
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, short_dir], cwd=root, capture_output=True, text=True, timeout=60,
            env={**os.environ, "PYTHONPATH": str(root)},
        )
        assert done.returncode == 0, done.stderr
        response_line, warning = done.stdout.splitlines()
        response = json.loads(response_line)
        assert response["id"] == 1 and response["error"] is None
        assert json.loads(response["result"]) == {"content": "served"}
        assert "Too many open files" in warning
