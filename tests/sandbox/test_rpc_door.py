"""A whole execute_code run whose RPC socket is attacked while the script works: a real child,
the real stub, real foreign connections made from inside the run."""

from __future__ import annotations

import json
import os
import textwrap

from actors.sandbox import Sandbox, SandboxStatus
from config.sandbox import CodeExecutionConfig
from tests.sandbox.helpers import ToolBench

FAST = CodeExecutionConfig(timeout=20, kill_grace_seconds=0.5, progress_interval_seconds=60)

# The script cannot know the token (the stub takes it out of the environment), as a foreign
# client would not: it opens connections of its own with what an attacker would send, keeps one
# holding half a frame, and then makes its own calls through hermes_tools.
ATTACK = r'''
import os, socket
from hermes_tools import read_file

path = os.environ["HERMES_RPC_SOCKET"]
request = b'{"type":"RpcRequest","id":1,"tool":"read_file","args":{"path":"stolen"}}\n'
openings = [
    request,
    b"guess\n" + request,
    b"[" * 100000 + b"\n",
    b'{"type":"RpcRequest","id":' + b"9" * 100000 + b',"tool":"read_file","args":{}}\n',
]
answers = []
for opening in openings:
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    try:
        s.sendall(opening)
    except (BrokenPipeError, ConnectionResetError):
        pass  # closed before the flood was all written
    data = b""
    while True:
        try:
            chunk = s.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        data += chunk
    s.close()
    answers.append(data.decode().strip())
held = socket.socket(socket.AF_UNIX)
held.connect(path)
held.sendall(b'{"type":"RpcRe')
print(read_file("a.txt")["content"])
print(read_file("b.txt")["content"])
for answer in answers:
    print(answer)
'''


class TestForeignClientsDuringARun:
    """Connections without the token are refused one by one; the script's own calls and its result are normal."""

    async def test_attacks_from_inside_the_run(self, bench: ToolBench, short_dir: str) -> None:
        bench.delay = 0
        sandbox = Sandbox(
            textwrap.dedent(ATTACK), call_tool=bench.call_tool, allowed_tools=bench.enabled, config=FAST,
            gate=bench.gate, base_dir=short_dir, jail=bench.ctx.jail,
        )
        result = await sandbox.run()
        assert result.status is SandboxStatus.SUCCESS and result.exit_code == 0, result.error
        lines = result.output.splitlines()
        assert lines[:2] == ["contents of a.txt", "contents of b.txt"]
        refusal = {"type": "RpcResponse", "id": 0, "result": None, "error": "Invalid RPC token"}
        assert [json.loads(line) for line in lines[2:]] == [refusal] * 4
        assert result.tool_calls_made == 2
        assert [name for name, _ in bench.calls] == ["read_file", "read_file"]
        assert os.listdir(short_dir) == []
