"""The two frames every dispatched call passes through, read and written without the codec's general path.

An admitted call's request is typed and its answer encoded once per call; through cattrs that took about
12 µs and 17 µs here (of a few hundred per call). A request is four fields whose types the frame's JSON
already shows, and an answer with a result is one string: both are built directly. Anything else (an
extra field, arguments that are not an object) is left to the codec, which decides and explains.
"""

from __future__ import annotations

import json
from typing import Any

from messages.rpc import RpcRequest
from messages.untrusted import repair_text

# The codec's own encoding: compact, UTF-8 as is.
_encode_text = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def plain_request(payload: dict[str, Any], request_id: int, tool: str) -> RpcRequest | None:
    """The request a frame's JSON is when it holds exactly a request's fields, of their types; else None.

    Args:
        payload: The frame's JSON object, its ``type`` and ``id`` and ``tool`` already checked
            (:func:`actors.sandbox.refusals.named_call`).
        request_id: Its id.
        tool: Its tool's name.
    """
    args = payload.get("args")
    if len(payload) != 4 or type(args) is not dict:
        return None
    return RpcRequest(id=request_id, tool=tool, args=args)


def result_frame(request_id: int, text: str) -> bytes:
    """The frame answering request ``request_id`` with ``text``: what the codec makes of
    ``RpcResponse(id=request_id, result=text)``, byte for byte."""
    frame = '{"id":%d,"result":%s,"error":null,"type":"RpcResponse"}\n' % (request_id, _encode_text(text))
    try:
        return frame.encode("utf-8")
    except UnicodeEncodeError:
        return repair_text(frame).encode("utf-8")
