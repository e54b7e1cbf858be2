"""Refusing a script's call by its tool's name, from the frame's JSON, before it is typed.

A call to a tool the script may not use is answered whatever else the request holds, so the RPC
server need not build the typed :class:`messages.rpc.RpcRequest` for it, and the answer differs
from one call to the next only by its id. A script can make such calls in a loop as fast as the
socket turns them round; typing the request and encoding the answer through cattrs was half of the
server's work per call, and this leaves a dictionary lookup and a byte join.
"""

from __future__ import annotations

from typing import Any

from messages.codec import TAG_FIELD, Codec
from messages.rpc import RpcMessage, RpcRequest, RpcResponse

_REQUEST_TAG = RpcRequest.__name__
# The codec writes a response's fields in their declared order, id first; what follows the id is
# the same for every refusal of one tool.
_ID_PREFIX = b'{"id":'


def named_call(payload: Any) -> tuple[int, str] | None:
    """The id and tool name of a frame's JSON shaped like a request, or None.

    Only the two fields a refusal needs are looked at; whether the rest would type is for the codec.
    """
    if type(payload) is not dict or payload.get(TAG_FIELD) != _REQUEST_TAG:
        return None
    request_id, tool = payload.get("id"), payload.get("tool")
    if type(request_id) is not int or type(tool) is not str:
        return None
    return request_id, tool


class ToolRefusals:
    """What a script is told when it calls a tool it may not call in this run.

    Args:
        codec: The conversation's codec (the answers are its frames).
        allowed: The tools the script may call.
        known: Tools that exist but are kept out of scripts; a call to one is told to use it as a
            normal tool call. Their answers are kept, one per name: the set is bounded, where the
            names a script makes up are not.
    """

    def __init__(self, codec: Codec[RpcMessage], allowed: frozenset[str], known: frozenset[str]) -> None:
        self._codec = codec
        self._allowed = allowed
        self._known = known - allowed
        self._available = ", ".join(sorted(allowed)) or "(none)"
        # Tool name to (the answer's frame after its id, the answer's text); reader threads share it,
        # and a race only builds one entry twice.
        self._answers: dict[str, tuple[bytes, str]] = {}

    def allows(self, tool: str) -> bool:
        """Whether the script may call ``tool``."""
        return tool in self._allowed

    def refuse(self, request_id: int, tool: str) -> tuple[bytes, str]:
        """The frame answering a call to ``tool``, which :meth:`allows` refused, and its text."""
        answer = self._answers.get(tool)
        if answer is None:
            text = self._text(tool)
            frame = self._codec.encode(RpcResponse(id=0, error=text))
            answer = (frame[len(_ID_PREFIX) + 1 :], text)
            if tool in self._known:
                self._answers[tool] = answer
        return b"%s%d%s" % (_ID_PREFIX, request_id, answer[0]), answer[1]

    def _text(self, tool: str) -> str:
        if tool in self._known:
            return (
                f"Tool '{tool}' is not available in execute_code. Use it as a normal tool call "
                f"instead. Available in execute_code: {self._available}"
            )
        return f"Unknown tool: {tool}. Available: {self._available}"
