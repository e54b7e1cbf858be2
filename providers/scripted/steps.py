"""Script steps of the scripted provider: parsing and validation of the JSON form.

A step is one model reply. Keys (all optional, unknown keys are an error)::

    text               visible answer text
    chunks             how many stream chunks ``text`` is split into (default: one per word)
    tool_calls         [{"id", "name", "arguments": {...} | "raw text", "extra_content"?}]
    args_chunks        how many chunks each tool call's arguments are split into (default 4)
    reasoning          reasoning / thinking text; ``signature`` its Anthropic signature
    error              {"status", "body"?, "headers"?}: answer with this HTTP error instead
    mid_stream_error   {"type"?, "message"?, "after_chunks"?}: an error event inside a 200 stream
    delay_first_byte   seconds before the response starts
    chunk_delay        seconds between chunks
    stall_after_chunks keep the connection open but send nothing after N chunks
    keepalive_every    while stalled, send an SSE comment every this many seconds
    drop_after_chunks  close the connection after N chunks
    hold_end           seconds between the last event and the end of the body (a server whose
                       last piece lags behind, as one writing it separately without TCP_NODELAY)
    finish_reason      stop | tool_calls | length | content_filter (default from content)
    usage              {"prompt_tokens", "completion_tokens", "cache_read_tokens",
                        "cache_write_tokens", "reasoning_tokens"} (default: estimated)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import attrs

from ..errors import ScriptError

_FINISH = ("stop", "tool_calls", "length", "content_filter")
_USAGE_KEYS = ("prompt_tokens", "completion_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")
_STEP_KEYS = frozenset(
    {
        "text", "chunks", "tool_calls", "args_chunks", "reasoning", "signature", "error",
        "mid_stream_error", "delay_first_byte", "chunk_delay", "stall_after_chunks", "keepalive_every",
        "drop_after_chunks", "hold_end", "finish_reason", "usage",
    }
)


@attrs.frozen
class ToolCallSpec:
    """One scripted tool call; ``arguments`` is the exact JSON text to stream."""

    id: str
    name: str
    arguments: str
    extra_content: dict[str, Any] | None = None


@attrs.frozen
class ErrorSpec:
    """An HTTP error answer; ``body`` None means a realistic default body."""

    status: int
    body: dict[str, Any] | str | None = None
    headers: Mapping[str, str] = attrs.field(factory=dict, converter=lambda h: MappingProxyType(dict(h)))


@attrs.frozen
class MidStreamErrorSpec:
    """An error event sent inside a 200 stream after ``after_chunks`` chunks."""

    type: str = "overloaded_error"
    message: str = "Overloaded"
    after_chunks: int = 1


@attrs.frozen
class Step:
    """One scripted model reply (see the module docstring for the keys)."""

    text: str | None = None
    chunks: int | None = None
    tool_calls: tuple[ToolCallSpec, ...] = ()
    args_chunks: int = 4
    reasoning: str | None = None
    signature: str | None = None
    error: ErrorSpec | None = None
    mid_stream_error: MidStreamErrorSpec | None = None
    delay_first_byte: float = 0.0
    chunk_delay: float = 0.0
    stall_after_chunks: int | None = None
    keepalive_every: float = 0.0
    drop_after_chunks: int | None = None
    hold_end: float = 0.0
    finish_reason: str | None = None
    usage: Mapping[str, int] | None = None

    @property
    def effective_finish_reason(self) -> str:
        """The finish reason in the internal vocabulary."""
        if self.finish_reason is not None:
            return self.finish_reason
        return "tool_calls" if self.tool_calls else "stop"

    def text_pieces(self) -> list[str]:
        """``text`` split into the requested number of chunks."""
        if not self.text:
            return []
        if self.chunks is None:
            return _split_words(self.text)
        return split_even(self.text, self.chunks)

    def usage_figures(self, prompt_tokens: int) -> dict[str, int]:
        """Usage to report: the scripted figures, or estimates from the text sizes."""
        produced = len(self.text or "") + len(self.reasoning or "")
        produced += sum(len(call.arguments) + len(call.name) for call in self.tool_calls)
        figures = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": max(1, produced // 4),
            "cache_read_tokens": 0,
            "cache_write_tokens": 0,
            "reasoning_tokens": len(self.reasoning or "") // 4,
        }
        figures.update(self.usage or {})
        return figures

    @classmethod
    def from_json(cls, obj: object) -> Step:
        """Build a step from its JSON form.

        Raises:
            ScriptError: an unknown key or a value of the wrong type or range.
        """
        if not isinstance(obj, Mapping):
            raise ScriptError(f"a step must be a JSON object, got {type(obj).__name__}")
        unknown = set(obj) - _STEP_KEYS
        if unknown:
            raise ScriptError(f"unknown step key(s): {', '.join(sorted(unknown))}")
        finish = obj.get("finish_reason")
        if finish is not None and finish not in _FINISH:
            raise ScriptError(f"finish_reason must be one of {', '.join(_FINISH)}, got {finish!r}")
        return cls(
            text=_opt(obj, "text", str),
            chunks=_opt_count(obj, "chunks"),
            tool_calls=tuple(_tool_call(i, c) for i, c in enumerate(_opt(obj, "tool_calls", list) or [])),
            args_chunks=_opt_count(obj, "args_chunks") or 4,
            reasoning=_opt(obj, "reasoning", str),
            signature=_opt(obj, "signature", str),
            error=_error(obj["error"]) if obj.get("error") is not None else None,
            mid_stream_error=_mid_error(obj["mid_stream_error"]) if obj.get("mid_stream_error") is not None else None,
            delay_first_byte=_seconds(obj, "delay_first_byte"),
            chunk_delay=_seconds(obj, "chunk_delay"),
            stall_after_chunks=_opt_count(obj, "stall_after_chunks", minimum=0),
            keepalive_every=_seconds(obj, "keepalive_every"),
            drop_after_chunks=_opt_count(obj, "drop_after_chunks", minimum=0),
            hold_end=_seconds(obj, "hold_end"),
            finish_reason=finish,
            usage=_usage(obj.get("usage")),
        )


def parse_steps(obj: object) -> list[Step]:
    """Parse one step, a list of steps, or ``{"steps": [...]}``.

    Raises:
        ScriptError: any step is invalid (nothing is returned then).
    """
    if isinstance(obj, Mapping) and set(obj) == {"steps"}:
        obj = obj["steps"]
    items = obj if isinstance(obj, list) else [obj]
    steps = []
    for index, item in enumerate(items):
        try:
            steps.append(Step.from_json(item))
        except ScriptError as exc:
            raise ScriptError(f"step {index}: {exc}") from None
    return steps


def split_even(text: str, count: int) -> list[str]:
    """Split ``text`` into ``count`` consecutive, non-empty (where possible) pieces."""
    count = max(1, min(count, len(text))) if text else 1
    size, extra = divmod(len(text), count)
    pieces, start = [], 0
    for i in range(count):
        end = start + size + (1 if i < extra else 0)
        pieces.append(text[start:end])
        start = end
    return pieces


def _split_words(text: str) -> list[str]:
    pieces: list[str] = []
    for word in text.split(" "):
        pieces.append(word if not pieces else " " + word)
    return [p for p in pieces if p] or [text]


def _opt(obj: Mapping[str, Any], key: str, kind: type) -> Any:
    value = obj.get(key)
    if value is not None and not isinstance(value, kind):
        raise ScriptError(f"{key} must be {kind.__name__}, got {type(value).__name__}")
    return value


def _opt_count(obj: Mapping[str, Any], key: str, minimum: int = 1) -> int | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ScriptError(f"{key} must be an integer >= {minimum}, got {value!r}")
    return value


def _seconds(obj: Mapping[str, Any], key: str) -> float:
    value = obj.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ScriptError(f"{key} must be a number of seconds >= 0, got {value!r}")
    return float(value)


def _tool_call(index: int, obj: object) -> ToolCallSpec:
    if not isinstance(obj, Mapping) or not isinstance(obj.get("name"), str):
        raise ScriptError(f"tool_calls[{index}] must be an object with a string 'name'")
    arguments = obj.get("arguments", {})
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    extra = obj.get("extra_content")
    if extra is not None and not isinstance(extra, Mapping):
        raise ScriptError(f"tool_calls[{index}].extra_content must be an object")
    return ToolCallSpec(
        id=str(obj.get("id") or f"call_{index + 1}"),
        name=obj["name"],
        arguments=arguments,
        extra_content=dict(extra) if extra is not None else None,
    )


def _error(obj: object) -> ErrorSpec:
    if not isinstance(obj, Mapping):
        raise ScriptError("error must be an object with a 'status'")
    status = obj.get("status")
    if isinstance(status, bool) or not isinstance(status, int) or not 400 <= status <= 599:
        raise ScriptError(f"error.status must be an HTTP error status (400-599), got {status!r}")
    body = obj.get("body")
    if body is not None and not isinstance(body, (str, Mapping)):
        raise ScriptError("error.body must be an object or a string")
    headers = obj.get("headers") or {}
    if not isinstance(headers, Mapping) or not all(isinstance(v, str) for v in headers.values()):
        raise ScriptError("error.headers must map names to strings")
    return ErrorSpec(
        status=status,
        body=dict(body) if isinstance(body, Mapping) else body,
        headers={str(k).lower(): v for k, v in headers.items()},
    )


def _mid_error(obj: object) -> MidStreamErrorSpec:
    if not isinstance(obj, Mapping):
        raise ScriptError("mid_stream_error must be an object")
    spec = MidStreamErrorSpec()
    # An "after_chunks": null means the default too (it used to make an error that never fired).
    after_chunks = _opt_count(obj, "after_chunks", minimum=0)
    return MidStreamErrorSpec(
        type=str(obj.get("type", spec.type)),
        message=str(obj.get("message", spec.message)),
        after_chunks=spec.after_chunks if after_chunks is None else after_chunks,
    )


def _usage(obj: object) -> dict[str, int] | None:
    if obj is None:
        return None
    if not isinstance(obj, Mapping) or set(obj) - set(_USAGE_KEYS):
        raise ScriptError(f"usage must be an object with keys among {', '.join(_USAGE_KEYS)}")
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in obj.values()):
        raise ScriptError("usage figures must be integers >= 0")
    return dict(obj)
