"""The API's wire forms: request bodies parsed into frozen records, and the
OpenAI-shaped response bodies, chunks and SSE frames built from our events.

Streaming follows OpenAI's framing exactly: ``data: <chunk json>\\n\\n`` per
chunk, the first carrying ``delta.role``, the last an empty delta with the
``finish_reason``, an optional usage-only chunk (``stream_options.include_usage``),
then ``data: [DONE]\\n\\n``.
"""

from __future__ import annotations

import json
import re
import secrets
from typing import Any

import attrs

from actors.platform.api.errors import BadRequest
from messages.events import SessionEvent

__all__ = [
    "DONE_FRAME",
    "ChunkFrames",
    "CompletionRequest",
    "RunRequest",
    "TurnUsage",
    "chunk",
    "completion_body",
    "event_frame",
    "event_payload",
    "finish_reason",
    "new_id",
    "parse_completion",
    "parse_run",
    "sse_data",
    "valid_session_id",
]

DONE_FRAME = b"data: [DONE]\n\n"

_ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})
_TEXT_PARTS = frozenset({"text", "input_text", "output_text"})
_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_FINISH = {"completed": "stop", "interrupted": "stop", "budget": "length", "error": "stop"}


@attrs.frozen
class TurnUsage:
    """Tokens one turn used."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    def minus(self, other: TurnUsage) -> TurnUsage:
        """The usage since ``other`` (never negative)."""
        return TurnUsage(
            max(self.prompt_tokens - other.prompt_tokens, 0), max(self.completion_tokens - other.completion_tokens, 0)
        )

    def to_json(self) -> dict[str, int]:
        """OpenAI's ``usage`` object."""
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
        }


@attrs.frozen
class CompletionRequest:
    """A ``POST /v1/chat/completions`` body, reduced to what a turn needs.

    Attributes:
        model: the model the client named (echoed back).
        stream / include_usage: streaming, and whether a usage chunk ends it.
        system: the client's system (and developer) messages, joined; an ephemeral layer.
        earlier: the messages before the last user message, as ``(role, text)`` pairs.
        text: the last user message: the turn's input.
    """

    model: str
    stream: bool
    include_usage: bool
    system: str | None
    earlier: tuple[tuple[str, str], ...]
    text: str


@attrs.frozen
class RunRequest:
    """A ``POST /v1/runs`` body."""

    input: str
    session_id: str | None
    model: str | None
    instructions: str | None


def new_id(prefix: str) -> str:
    """An unguessable id such as ``chatcmpl-<24 hex>`` or ``run_<24 hex>``."""
    return f"{prefix}{secrets.token_hex(12)}"


def valid_session_id(value: str) -> bool:
    """A client-chosen session id: 1-64 letters, digits, ``_ . -`` (safe in actor paths)."""
    return _SESSION_ID.fullmatch(value) is not None


def _text_of(content: Any, index: int) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise BadRequest(f"messages[{index}].content must be a string or a list of parts", param=f"messages[{index}].content")
    pieces: list[str] = []
    for part in content:
        if not isinstance(part, dict) or part.get("type") not in _TEXT_PARTS or not isinstance(part.get("text"), str):
            raise BadRequest(
                f"messages[{index}].content: only text parts are supported", param=f"messages[{index}].content"
            )
        pieces.append(part["text"])
    return "".join(pieces)


def _field(body: dict[str, Any], name: str, kind: type | tuple[type, ...], default: Any = None) -> Any:
    value = body.get(name, default)
    if value is not None and (not isinstance(value, kind) or (kind is not bool and isinstance(value, bool))):
        raise BadRequest(f"'{name}' has the wrong type", param=name)
    return value


def parse_completion(body: Any) -> CompletionRequest:
    """Check and reduce a chat completions body.

    Raises:
        BadRequest: not an object, no messages, a bad role or content, or the
            last message is not from the user.
    """
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object")
    model = _field(body, "model", str)
    if not model:
        raise BadRequest("'model' is required", param="model")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest("'messages' must be a non-empty list", param="messages")
    stream = bool(_field(body, "stream", bool, False))
    options = _field(body, "stream_options", dict, {}) or {}
    system: list[str] = []
    turns: list[tuple[str, str]] = []
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in _ROLES:
            raise BadRequest(f"messages[{index}] needs a role among {sorted(_ROLES)}", param=f"messages[{index}].role")
        text = _text_of(message.get("content"), index)
        if message["role"] in ("system", "developer"):
            system.append(text)
        else:
            turns.append((message["role"], text))
    if not turns or turns[-1][0] != "user":
        raise BadRequest("the last message must be a user message", param="messages")
    if not turns[-1][1].strip():
        raise BadRequest("the last user message is empty", param="messages")
    return CompletionRequest(
        model=model,
        stream=stream,
        include_usage=bool(options.get("include_usage")),
        system="\n\n".join(s for s in system if s) or None,
        earlier=tuple(turns[:-1]),
        text=turns[-1][1],
    )


def parse_run(body: Any) -> RunRequest:
    """Check a runs body (``input`` text; optional ``session_id``, ``model``, ``instructions``).

    Raises:
        BadRequest: not an object, no input, or a wrongly typed field.
    """
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object")
    text = _field(body, "input", str)
    if not text or not text.strip():
        raise BadRequest("'input' must be a non-empty string", param="input")
    session_id = _field(body, "session_id", str)
    if session_id is not None and not valid_session_id(session_id):
        raise BadRequest("'session_id' must be 1-64 letters, digits, '_', '.' or '-'", param="session_id")
    return RunRequest(text, session_id, _field(body, "model", str), _field(body, "instructions", str))


def finish_reason(turn_reason: str) -> str:
    """OpenAI's ``finish_reason`` for a turn's end reason."""
    return _FINISH.get(turn_reason, "stop")


def chunk(cid: str, created: int, model: str, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    """One ``chat.completion.chunk``."""
    return {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def completion_body(cid: str, created: int, model: str, text: str, finish: str, usage: TurnUsage) -> dict[str, Any]:
    """A non-streaming ``chat.completion``."""
    return {
        "id": cid,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish, "logprobs": None}
        ],
        "usage": usage.to_json(),
    }


def sse_data(payload: dict[str, Any]) -> bytes:
    """A ``data:`` SSE frame holding ``payload`` as compact JSON."""
    return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"


class ChunkFrames:
    """The ``data:`` frames of one streamed completion's chunks, byte for byte ``sse_data(chunk(...))``,
    with what every chunk repeats (id, created, model) encoded once instead of per chunk.

    Args:
        cid / created / model: the completion's id, creation time and the model the client named.
    """

    def __init__(self, cid: str, created: int, model: str) -> None:
        # The last '"delta":{}' is the chunk's own: the id and model before it are JSON strings, whose
        # quotes are escaped.
        head, _, tail = sse_data(chunk(cid, created, model, {})).rpartition(b'"delta":{}')
        self._head = head + b'"delta":'
        self._tail = tail
        self.opening = self._head + b'{"role":"assistant","content":""}' + tail

    def content(self, text: str) -> bytes:
        """The frame of a chunk adding ``text`` to the answer."""
        return b"".join((self._head, b'{"content":', json.dumps(text).encode(), b"}", self._tail))


def event_payload(event: SessionEvent) -> dict[str, Any]:
    """A session event as JSON: its fields plus ``type`` (``text_delta``, ``turn_finished`` ...)."""
    name = re.sub(r"(?<!^)(?=[A-Z])", "_", type(event).__name__).lower()
    return {"type": name, **attrs.asdict(event)}


def event_frame(seq: int, payload: dict[str, Any]) -> bytes:
    """An SSE frame with ``id`` (the event's sequence number, for ``Last-Event-ID``) and ``event`` type."""
    data = json.dumps(payload, separators=(",", ":"))
    return f"id: {seq}\nevent: {payload['type']}\ndata: {data}\n\n".encode()
