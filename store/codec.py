"""Messages in and out of storage: the OpenAI-style dict <-> its stored columns.

The columns hold the keys the store understands (role, content, tool_calls,
tool_call_id, name, tool_name, finish_reason, reasoning) when their values have
the usual type; everything else -- provider extras such as thinking signatures
or Responses items, a key present with the value None, a value of an unusual
type -- goes verbatim into one JSON ``extras`` object. Decoding merges the two,
so ``decode(encode(m)) == m`` for every JSON-serialisable message whose text
is valid Unicode. As the last line of defence before SQLite, whose UTF-8
binding fails on them, lone surrogates anywhere in a message are stored as
U+FFFD (they should have been repaired where they entered the daemon).
"""

from __future__ import annotations

import json
from typing import Any

import attrs

from messages.raw_json import RawJson, encode_spliced
from messages.untrusted import repair_text
from store.errors import InvalidRecordError

__all__ = ["EncodedMessage", "RawJson", "decode_message", "dump_json", "encode_message", "encode_raw", "message_text"]

# Keys stored in a column of their own when their value is a string.
_STRING_COLUMNS = ("tool_call_id", "name", "tool_name", "finish_reason", "reasoning")


# Made once: json.dumps with these options would build a new encoder at every call (tens per turn).
_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


def dump_json(value: Any, what: str) -> str:
    """Compact JSON text of ``value``, lone surrogates in its strings repaired; a top-level
    :class:`RawJson` value of a dict is spliced in as it is (the text is the same as encoding
    the value it was made from).

    Raises:
        InvalidRecordError: the value is not JSON-serialisable (or holds NaN / infinity).
    """
    try:
        text = encode_spliced(value, _ENCODE)
    except (TypeError, ValueError) as exc:
        raise InvalidRecordError(f"{what} is not JSON-serialisable: {exc}") from exc
    # In a JSON string a lone surrogate is one code point like any other: U+FFFD keeps the text valid JSON.
    return repair_text(text)


def encode_raw(value: Any, what: str) -> RawJson:
    """``value`` encoded now, to be spliced into many documents.

    Raises:
        InvalidRecordError: see :func:`dump_json`.
    """
    return RawJson(dump_json(value, what))


@attrs.frozen
class EncodedMessage:
    """A message split into the store's columns (see the module docstring)."""

    role: str
    content: str | None
    content_json: bool
    tool_calls: str | None
    tool_call_id: str | None
    name: str | None
    tool_name: str | None
    finish_reason: str | None
    reasoning: str | None
    extras: str | None
    tool_call_count: int


def encode_message(message: Any) -> EncodedMessage:
    """Split one message into columns.

    Raises:
        InvalidRecordError: not a dict, no string ``role``, or not JSON-serialisable.
    """
    if not isinstance(message, dict):
        raise InvalidRecordError(f"a message must be a dict, got {type(message).__name__}")
    role = message.get("role")
    if not isinstance(role, str) or not role:
        raise InvalidRecordError("a message needs a non-empty string 'role'")
    extras: dict[str, Any] = {}
    content: str | None = None
    content_json = False
    tool_calls: str | None = None
    tool_call_count = 0
    strings: dict[str, str | None] = dict.fromkeys(_STRING_COLUMNS)
    for key, value in message.items():
        if not isinstance(key, str):
            raise InvalidRecordError(f"message keys must be strings, got {key!r}")
        if key == "role":
            continue
        if key == "content" and value is not None:
            if isinstance(value, str):
                content = repair_text(value)
            else:
                content, content_json = dump_json(value, "message content"), True
        elif key == "tool_calls" and isinstance(value, list):
            tool_calls = dump_json(value, "tool_calls")
            tool_call_count = len(value)
        elif key in strings and isinstance(value, str):
            strings[key] = repair_text(value)
        else:
            extras[key] = value
    return EncodedMessage(
        role=role,
        content=content,
        content_json=content_json,
        tool_calls=tool_calls,
        extras=dump_json(extras, "message extras") if extras else None,
        tool_call_count=tool_call_count,
        **strings,
    )


def decode_message(
    role: str,
    content: str | None,
    content_json: bool,
    tool_calls: str | None,
    tool_call_id: str | None,
    name: str | None,
    tool_name: str | None,
    finish_reason: str | None,
    reasoning: str | None,
    extras: str | None,
) -> dict[str, Any]:
    """Rebuild the message dict from its columns (the inverse of ``encode_message``)."""
    message: dict[str, Any] = {"role": role}
    if content is not None:
        message["content"] = json.loads(content) if content_json else content
    if tool_calls is not None:
        message["tool_calls"] = json.loads(tool_calls)
    for key, value in zip(_STRING_COLUMNS, (tool_call_id, name, tool_name, finish_reason, reasoning), strict=True):
        if value is not None:
            message[key] = value
    if extras is not None:
        message.update(json.loads(extras))
    return message


def _parts_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = [part["text"] for part in content if isinstance(part, dict) and isinstance(part.get("text"), str)]
    return " ".join(texts)


def _calls_text(tool_calls: Any) -> str:
    if not isinstance(tool_calls, list):
        return ""
    pieces = []
    for call in tool_calls:
        if not isinstance(call, dict):
            continue
        function = call.get("function")
        function = function if isinstance(function, dict) else {}
        arguments = function.get("arguments", "")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
        pieces.append(f"{function.get('name') or ''} {arguments}")
    return " ".join(pieces)


def message_text(message: dict[str, Any]) -> tuple[str, str]:
    """The searchable text of a message: (its content's text, its tool calls' names and arguments).

    Mirrors the SQL of the search index: text parts of list content are joined by spaces.
    """
    return _parts_text(message.get("content")), _calls_text(message.get("tool_calls"))
