"""The one wire codec of hermes-actors: typed messages as newline-delimited JSON.

Every socket in the project (the control socket, the sandbox RPC socket) speaks
frames of one JSON object per line. A frame carries one message of a tagged
union: the field ``"type"`` holds the class name, the other fields are the
attrs fields of that class.

Decoding is strict. cattrs on its own turns ``"12"`` into ``12``, ``5`` into
``"5"`` and ``"false"`` into ``True``; here ``str``, ``int``, ``float`` and
``bool`` fields accept only JSON values of their own kind (an integer is a
valid ``float``; a boolean is never a number; an integer must fit in 64 bits,
as everything downstream -- SQLite first -- expects). The JSON is read by
``messages.untrusted.loads``: nesting is bounded, and lone surrogates in the
frame's strings become U+FFFD. Every way a frame can be wrong raises one
subclass of :class:`MessageDecodeError` whose text says what was wrong and
where::

    MessageDecodeError(ValueError)
    ├── FrameTooLarge          the frame exceeds the inbound size limit
    ├── InvalidUtf8            the bytes are not UTF-8
    ├── InvalidJson            the text is not JSON (nested too deeply, a number
    │                          too long), or not a JSON object
    ├── UnknownMessageType     the "type" tag is missing or names no member
    └── InvalidMessageFields   a field is missing or has the wrong type

This module imports neither Trio nor the SDKs, so the CLI can use it and still
start fast. :class:`FrameBuffer` splits a byte stream into frames for any
transport; ``messages.framing`` adapts it to Trio streams.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Iterator
from typing import Any, Generic, TypeVar, get_args

import cattrs
from cattrs.preconf.json import make_converter
from cattrs.v import format_exception

from messages.untrusted import JsonLimitExceeded, JsonSyntaxError, UntrustedJsonError, loads, repair_text

__all__ = [
    "DEFAULT_MAX_FRAME_BYTES",
    "TAG_FIELD",
    "Codec",
    "FrameBuffer",
    "FrameTooLarge",
    "InvalidJson",
    "InvalidMessageFields",
    "InvalidUtf8",
    "MessageDecodeError",
    "UnknownMessageType",
    "format_field_error",
    "make_message_converter",
]

T = TypeVar("T")

#: Inbound frames from untrusted peers are small by default.
DEFAULT_MAX_FRAME_BYTES = 1024 * 1024
#: The JSON key that names a message's class.
TAG_FIELD = "type"

# Built once: json.dumps with non-default options builds a new encoder per call.
_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


class MessageDecodeError(ValueError):
    """A frame could not be turned into a message; ``str()`` says why."""


class FrameTooLarge(MessageDecodeError):
    """A frame is longer than the receiving side accepts."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"frame of {size} bytes exceeds the limit of {limit} bytes")
        self.size = size
        self.limit = limit


class InvalidUtf8(MessageDecodeError):
    """A frame is not valid UTF-8."""


class InvalidJson(MessageDecodeError):
    """A frame is not a JSON object."""


class UnknownMessageType(MessageDecodeError):
    """A frame's ``type`` tag is missing or names no message of the union."""


class InvalidMessageFields(MessageDecodeError):
    """A frame names a known message but a field is missing or mistyped."""


class _WrongScalar(TypeError):
    """Raised by the strict scalar hooks; its text is shown as it is."""


def _strict_str(value: Any, _: type) -> str:
    if type(value) is not str:
        raise _WrongScalar(f"expected a string, got {_json_kind(value)}")
    return value


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _strict_int(value: Any, _: type) -> int:
    if type(value) is not int:
        raise _WrongScalar(f"expected an integer, got {_json_kind(value)}")
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise _WrongScalar("expected an integer that fits in 64 bits")
    return value


def _strict_float(value: Any, _: type) -> float:
    if type(value) is float:
        return value
    if type(value) is int:
        return float(value)
    raise _WrongScalar(f"expected a number, got {_json_kind(value)}")


def _strict_bool(value: Any, _: type) -> bool:
    if type(value) is not bool:
        raise _WrongScalar(f"expected true or false, got {_json_kind(value)}")
    return value


def _json_kind(value: Any) -> str:
    kinds = {str: "a string", bool: "a boolean", int: "an integer", float: "a number",
             list: "an array", dict: "an object", type(None): "null"}
    return kinds.get(type(value), type(value).__name__)


def make_message_converter() -> cattrs.Converter:
    """Return the project's message converter: preconf JSON, detailed
    validation, and strict scalar hooks so no wrong type is coerced."""
    converter = make_converter(detailed_validation=True)
    converter.register_structure_hook(str, _strict_str)
    converter.register_structure_hook(int, _strict_int)
    converter.register_structure_hook(float, _strict_float)
    converter.register_structure_hook(bool, _strict_bool)
    return converter


class _UnionHooks:
    """The structure and unstructure hooks of one union's members, each built when first needed.

    Generating a member's hooks costs about a millisecond; the control protocol's replies and events
    are some thirty members, of which a client meets a few. One instance per union serves every codec
    of that union (:func:`_hooks`), and reader threads may share it, so building takes a lock.
    """

    def __init__(self, union: Any) -> None:
        members = get_args(union) or (union,)
        self.tags: dict[str, type] = {cls.__name__: cls for cls in members}
        self._converter = make_message_converter()
        self._structure: dict[type, Any] = {}
        self._unstructure: dict[type, Any] = {}
        self._building = threading.Lock()

    def structure(self, payload: dict[str, Any], cls: type) -> Any:
        """The message of class ``cls`` that ``payload`` describes (cattrs ignores the tag key)."""
        hook = self._structure.get(cls)
        if hook is None:
            with self._building:
                hook = self._structure[cls] = self._converter.get_structure_hook(cls)
        return hook(payload, cls)

    def unstructure(self, message: Any) -> dict[str, Any]:
        """The JSON-ready dict of ``message``, its tag included."""
        cls = type(message)
        hook = self._unstructure.get(cls)
        if hook is None:
            with self._building:
                hook = self._unstructure[cls] = self._converter.get_unstructure_hook(cls)
        payload: dict[str, Any] = hook(message)
        payload[TAG_FIELD] = cls.__name__
        return payload


@functools.cache
def _hooks(union: Any) -> _UnionHooks:
    """The one :class:`_UnionHooks` of ``union`` in this process."""
    return _UnionHooks(union)


class Codec(Generic[T]):
    """Encodes and decodes the messages of one conversation (one tagged union).

    Args:
        union: the union of frozen attrs classes this conversation carries
            (a single class is accepted too).
        max_frame_bytes: the largest inbound frame :meth:`decode` accepts.
    """

    def __init__(self, union: Any, *, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        if max_frame_bytes <= 0:
            raise ValueError("max_frame_bytes must be positive")
        self.union = union
        self.max_frame_bytes = max_frame_bytes
        self._hooks = _hooks(union)
        self._tags = self._hooks.tags

    def to_dict(self, message: T) -> dict[str, Any]:
        """The JSON-ready dict of ``message``, tag included."""
        return self._hooks.unstructure(message)

    def from_dict(self, payload: Any) -> T:
        """Build a message from a decoded JSON value.

        Raises:
            UnknownMessageType, InvalidMessageFields, InvalidJson.
        """
        if not isinstance(payload, dict):
            raise InvalidJson(f"a frame must be a JSON object, got {_json_kind(payload)}")
        tag = payload.get(TAG_FIELD)
        if not isinstance(tag, str) or tag not in self._tags:
            known = ", ".join(sorted(self._tags))
            shown = "missing" if tag is None else repr(tag)
            raise UnknownMessageType(f"unknown message type {shown} (expected one of: {known})")
        try:
            message: T = self._hooks.structure(payload, self._tags[tag])
        except (cattrs.BaseValidationError, KeyError, TypeError, ValueError) as exc:
            raise InvalidMessageFields(_describe_fields_error(tag, exc)) from exc
        return message

    def encode(self, message: T) -> bytes:
        """One frame: the message as compact JSON followed by a newline.

        A lone surrogate that reached a message despite the repairs where text
        enters is sent as U+FFFD rather than failing the connection.
        """
        text = _ENCODE(self._hooks.unstructure(message)) + "\n"
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError:
            return repair_text(text).encode("utf-8")

    def decode(self, frame: bytes) -> T:
        """Decode one frame (with or without its trailing newline).

        Raises:
            FrameTooLarge, InvalidUtf8, InvalidJson, UnknownMessageType,
            InvalidMessageFields: all subclasses of MessageDecodeError.
        """
        return self.from_dict(self.parse(frame))

    def parse(self, frame: bytes) -> Any:
        """The JSON value of one frame, not yet checked against the union: the first half of
        :meth:`decode`, for a reader that can answer some frames from their JSON alone.

        Raises:
            FrameTooLarge, InvalidUtf8, InvalidJson.
        """
        if len(frame) > self.max_frame_bytes:
            raise FrameTooLarge(len(frame), self.max_frame_bytes)
        try:
            return loads(frame)
        except (JsonSyntaxError, JsonLimitExceeded) as exc:
            raise InvalidJson(f"frame {exc}") from exc
        except UntrustedJsonError as exc:
            raise InvalidUtf8(f"frame {exc}") from exc


def format_field_error(exc: BaseException, cls: type | None) -> str:
    """cattrs' error text for one field, keeping our own and validators' messages."""
    if isinstance(exc, (TypeError, ValueError)) and exc.args and isinstance(exc.args[0], str) and exc.args[0]:
        return exc.args[0]
    return format_exception(exc, cls)


def _describe_fields_error(tag: str, exc: BaseException) -> str:
    if isinstance(exc, cattrs.BaseValidationError):
        problems = "; ".join(cattrs.transform_error(exc, path=tag, format_exception=format_field_error))
    else:
        problems = str(exc) or type(exc).__name__
    return f"invalid {tag} message: {problems}"


class FrameBuffer:
    """Splits a byte stream into newline-terminated frames, bounded in size.

    Feed it whatever a transport read returned; iterate :meth:`frames` for the
    complete ones. A frame longer than ``max_frame_bytes`` raises
    :class:`FrameTooLarge` once, and its remaining bytes are discarded up to
    the next newline, so a connection can answer the error and go on.
    """

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        self.max_frame_bytes = max_frame_bytes
        self._buffer = bytearray()
        # Invariant: while True, bytes up to the next newline belong to an oversized frame.
        self._discarding = False

    def feed(self, data: bytes | bytearray) -> None:
        """Add bytes read from the transport."""
        self._buffer += data

    def frames(self) -> Iterator[bytes]:
        """Yield each complete frame (without its newline).

        Raises:
            FrameTooLarge: a frame exceeds the limit; later calls go on after it.
        """
        while True:
            end = self._buffer.find(b"\n")
            if self._discarding:
                if end < 0:
                    self._buffer.clear()
                    return
                del self._buffer[: end + 1]
                self._discarding = False
                continue
            if end < 0:
                if len(self._buffer) > self.max_frame_bytes:
                    size = len(self._buffer)
                    self._buffer.clear()
                    self._discarding = True
                    raise FrameTooLarge(size, self.max_frame_bytes)
                return
            if end > self.max_frame_bytes:
                del self._buffer[: end + 1]
                raise FrameTooLarge(end, self.max_frame_bytes)
            frame = bytes(self._buffer[:end])
            del self._buffer[: end + 1]
            yield frame

    def sole_frame(self, data: bytes) -> bytes | None:
        """The frame ``data`` is when it is exactly one whole frame and nothing is held; else None.

        A reader that got None feeds ``data`` as usual. The usual read of a request-response
        conversation is one whole frame, and this takes it without a trip through the buffer.
        """
        end = data.find(b"\n")
        if end < 0 or end != len(data) - 1 or end > self.max_frame_bytes or self._buffer or self._discarding:
            return None
        return data[:end]

    @property
    def empty(self) -> bool:
        """Whether the next bytes fed start a frame: nothing is held, and no oversized frame is being skipped."""
        return not self._buffer and not self._discarding

    @property
    def pending_bytes(self) -> int:
        """Bytes received that do not yet form a complete frame."""
        return len(self._buffer)

    def take(self) -> bytes:
        """Every byte held (complete frames with their newlines, then a partial one), leaving none."""
        held = bytes(self._buffer)
        self._buffer.clear()
        return held
