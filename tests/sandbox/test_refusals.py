"""The answers to calls of tools a script may not call, made once per tool and spliced with each id."""

from __future__ import annotations

import pytest

from actors.sandbox.refusals import ToolRefusals, named_call
from messages.codec import Codec
from messages.rpc import RpcMessage, RpcResponse

CODEC: Codec[RpcMessage] = Codec(RpcMessage)
ALLOWED = frozenset({"read_file", "terminal"})


@pytest.mark.parametrize("tool", ["memory", "no_such_tool", "naïve ☃ \"quoted\""])
@pytest.mark.parametrize("request_id", [0, 1, 42, -7, 2**63 - 1, 10**30])
def test_each_answer_is_the_frame_the_codec_would_write(tool: str, request_id: int) -> None:
    """Asked twice (the second from what was kept), the answer is byte for byte the codec's own frame."""
    refusals = ToolRefusals(CODEC, ALLOWED, frozenset({"memory", "read_file"}))
    for _ in range(2):
        frame, text = refusals.refuse(request_id, tool)
        assert frame == CODEC.encode(RpcResponse(id=request_id, error=text))
    assert text.startswith("Unknown tool: " if tool != "memory" else "Tool 'memory' is not available")
    assert text.endswith("read_file, terminal")


def test_only_the_allowed_tools_are_allowed() -> None:
    refusals = ToolRefusals(CODEC, ALLOWED, frozenset({"memory"}))
    assert [refusals.allows(tool) for tool in ("read_file", "terminal", "memory", "")] == [True, True, False, False]


def test_a_run_without_tools_says_none_are_available() -> None:
    _, text = ToolRefusals(CODEC, frozenset(), frozenset()).refuse(1, "read_file")
    assert text == "Unknown tool: read_file. Available: (none)"


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        ({"type": "RpcRequest", "id": 3, "tool": "memory", "args": {}}, (3, "memory")),
        ({"type": "RpcRequest", "id": 3, "tool": "memory"}, (3, "memory")),
        ({"type": "RpcResponse", "id": 3, "tool": "memory"}, None),
        ({"id": 3, "tool": "memory"}, None),
        ({"type": "RpcRequest", "id": True, "tool": "memory"}, None),
        ({"type": "RpcRequest", "id": 3.0, "tool": "memory"}, None),
        ({"type": "RpcRequest", "id": 3, "tool": ["memory"]}, None),
        ([{"type": "RpcRequest", "id": 3, "tool": "memory"}], None),
        ("RpcRequest", None),
    ],
)
def test_named_call_reads_only_a_request_shaped_object(payload: object, expected: object) -> None:
    assert named_call(payload) == expected
