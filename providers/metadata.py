"""Model limits (context length, maximum output tokens) and token estimates.

Where a model's limits come from, strongest first:

1. configuration (``model.context_length`` / ``model.max_output_tokens``) for
   the configured model;
2. what the latest context-overflow error taught: a stated limit (cached on
   disk, a fact the endpoint stated) or, when it stated none, the next lower
   probe tier (a guess, memory only); an overflow that stated the room left
   for output lowers the output cap (memory only);
3. the built-in table of well-known models;
4. a conservative default.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

import attrs
import trio

from config.providers import ModelConfig
from messages.chat import ChatMessage, dict_form


DEFAULT_CONTEXT_LENGTH = 128_000
DEFAULT_MAX_OUTPUT = 8_192
CACHE_FILE_NAME = "context_lengths.json"
PROBE_TIERS = (128_000, 64_000, 32_000, 16_000, 8_000)


@attrs.frozen
class ModelLimits:
    """How much a model reads and writes, in tokens."""

    context_length: int
    max_output_tokens: int


@attrs.frozen
class OverflowInfo:
    """What a context-overflow error message said (each figure may be missing)."""

    context_length: int | None
    available_output: int | None


# Prefix of the bare model name (provider prefix removed, dots as dashes) -> limits.
# Longest prefix wins.
KNOWN_MODELS: Mapping[str, ModelLimits] = MappingProxyType(
    {
        "claude-opus-4-6": ModelLimits(200_000, 128_000),
        "claude-sonnet-4-6": ModelLimits(200_000, 128_000),
        "claude-opus-4-5": ModelLimits(200_000, 64_000),
        "claude-sonnet-4-5": ModelLimits(200_000, 64_000),
        "claude-haiku-4-5": ModelLimits(200_000, 64_000),
        "claude-opus-4": ModelLimits(200_000, 32_000),
        "claude-sonnet-4": ModelLimits(200_000, 64_000),
        "claude-3-7-sonnet": ModelLimits(200_000, 64_000),
        "claude-3-5": ModelLimits(200_000, 8_192),
        "claude": ModelLimits(200_000, 8_192),
        "gpt-5": ModelLimits(400_000, 128_000),
        "gpt-4-1": ModelLimits(1_047_576, 32_768),
        "gpt-4o": ModelLimits(128_000, 16_384),
        "o3": ModelLimits(200_000, 100_000),
        "o4-mini": ModelLimits(200_000, 100_000),
        "codex": ModelLimits(400_000, 128_000),
        "gemini-3": ModelLimits(1_048_576, 65_536),
        "gemini-2-5": ModelLimits(1_048_576, 65_536),
        "deepseek": ModelLimits(128_000, 8_192),
        "kimi-k2": ModelLimits(262_144, 32_768),
        "qwen3": ModelLimits(262_144, 32_768),
        "glm-4": ModelLimits(128_000, 16_384),
        "minimax": ModelLimits(1_000_000, 40_000),
    }
)

_CONTEXT_PATTERNS = (
    re.compile(r"maximum context length is (\d[\d,]*)", re.I),
    re.compile(r"context (?:length|window|limit)(?: of| is|:)? (\d[\d,]*)", re.I),
    re.compile(r"(\d[\d,]*) tokens? > (\d[\d,]*) maximum", re.I),
)
_AVAILABLE_PATTERN = re.compile(r"(\d[\d,]*) \+ (\d[\d,]*) > (\d[\d,]*)")


def bare_model_name(model: str) -> str:
    """``anthropic/claude-opus-4.6`` -> ``claude-opus-4-6`` (the table's key form)."""
    return model.rsplit("/", 1)[-1].lower().replace(".", "-")


def parse_overflow_message(message: str) -> OverflowInfo:
    """Pull the context length and the room left for output from an overflow error.

    Understands the usual shapes: "maximum context length is N tokens",
    "prompt is too long: X tokens > N maximum", and Anthropic's
    "input length and `max_tokens` exceed context limit: X + Y > N".
    """
    available = None
    context = None
    match = _AVAILABLE_PATTERN.search(message)
    if match:
        used, _, limit = (_int(g) for g in match.groups())
        context = limit
        available = max(0, limit - used)
    if context is None:
        for pattern in _CONTEXT_PATTERNS:
            found = pattern.search(message)
            if found:
                context = _int(found.groups()[-1])
                break
    if context is not None and context < 1024:
        context = None  # too small to be a context window: some other number matched
    return OverflowInfo(context_length=context, available_output=available)


def _int(text: str) -> int:
    return int(text.replace(",", ""))


def builtin_limits(model: str) -> ModelLimits:
    """Limits from the built-in table alone (or the defaults)."""
    return _lookup(bare_model_name(model)) or ModelLimits(DEFAULT_CONTEXT_LENGTH, DEFAULT_MAX_OUTPUT)


def rough_tokens(messages: Sequence[ChatMessage]) -> int:
    """Characters / 4 over the messages' dict form serialized: a cheap, provider-neutral estimate."""
    return max(1, len(json.dumps([dict_form(m) for m in messages], ensure_ascii=False, default=str)) // 4)


class HistorySize:
    """:func:`rough_tokens` of one conversation's history, which grows call by call, without encoding
    all of it again at every call.

    Each message's encoded length is kept while the message is in the history (messages are frozen:
    a steer or a budget note replaces the message it extends).
    """

    def __init__(self) -> None:
        # id -> (the message, its encoded length); holding the message keeps its id from being reused.
        self._lengths: dict[int, tuple[ChatMessage, int]] = {}

    def tokens(self, messages: Sequence[ChatMessage]) -> int:
        """``rough_tokens(messages)``."""
        known = self._lengths
        current: dict[int, tuple[ChatMessage, int]] = {}
        # json.dumps writes a list as "[" + items joined by ", " + "]".
        total = 2 + 2 * max(len(messages) - 1, 0)
        for message in messages:
            entry = known.get(id(message))
            if entry is None or entry[0] is not message:
                entry = (message, len(json.dumps(dict_form(message), ensure_ascii=False, default=str)))
            current[id(message)] = entry
            total += entry[1]
        self._lengths = current
        return max(1, total // 4)


class ModelMetadata:
    """Limits per model, for one daemon.

    Args:
        cache_dir: where probed context lengths persist (created if missing).
        config: the ``model`` configuration section (its overrides apply to its
            ``default`` model).
    """

    def __init__(self, cache_dir: Path, config: ModelConfig | None = None) -> None:
        self._cache_path = Path(cache_dir) / CACHE_FILE_NAME
        self._config = config or ModelConfig()
        self._probed: dict[str, int] = {}
        self._guessed: dict[str, int] = {}
        self._output_caps: dict[str, int] = {}
        # Serializes cache writes so an older snapshot never lands after a newer one.
        self._write_lock = trio.Lock()

    @classmethod
    async def open(cls, cache_dir: Path, config: ModelConfig | None = None) -> ModelMetadata:
        """A metadata object with the on-disk cache already read (off the Trio loop)."""
        metadata = cls(cache_dir, config)
        await metadata.load()
        return metadata

    async def load(self) -> None:
        """Read the on-disk cache of probed limits (missing or corrupt: empty)."""
        self._probed = await trio.to_thread.run_sync(_read_cache, self._cache_path)

    def limits(self, model: str) -> ModelLimits:
        """The best known limits for ``model``."""
        key = bare_model_name(model)
        table = _lookup(key)
        context = table.context_length if table else DEFAULT_CONTEXT_LENGTH
        output = table.max_output_tokens if table else None
        # Invariant: a model is in at most one of _probed and _guessed (the later finding wins).
        context = self._probed.get(key) or self._guessed.get(key) or context
        if self._is_configured(model):
            context = self._config.context_length or context
            output = self._config.max_output_tokens or output
        output = output or DEFAULT_MAX_OUTPUT
        if key in self._output_caps:
            output = min(output, self._output_caps[key])
        return ModelLimits(context_length=context, max_output_tokens=min(output, context))

    def context_length(self, model: str) -> int:
        """Context window of ``model`` in tokens."""
        return self.limits(model).context_length

    def max_output_tokens(self, model: str) -> int:
        """Largest ``max_tokens`` worth asking ``model`` for."""
        return self.limits(model).max_output_tokens

    async def record_overflow(self, model: str, message: str) -> OverflowInfo:
        """Learn from a context-overflow error message.

        A stated context length is cached on disk (atomic write); a stated
        room-for-output lowers the output cap (memory only); with no number
        the next lower probe tier becomes an in-memory guess.
        """
        info = parse_overflow_message(message)
        key = bare_model_name(model)
        if info.context_length is not None:
            self._probed[key] = info.context_length
            self._guessed.pop(key, None)
            async with self._write_lock:
                await trio.to_thread.run_sync(_write_cache, self._cache_path, dict(self._probed))
        else:
            current = self.context_length(model)
            lower = [tier for tier in PROBE_TIERS if tier < current]
            if lower:
                self._guessed[key] = lower[0]
                self._probed.pop(key, None)
        if info.available_output is not None and info.available_output > 0:
            self._output_caps[key] = info.available_output
        return info

    def _is_configured(self, model: str) -> bool:
        return bare_model_name(model) == bare_model_name(self._config.default)


def _lookup(key: str) -> ModelLimits | None:
    best = None
    for prefix, limits in KNOWN_MODELS.items():
        if key.startswith(prefix) and (best is None or len(prefix) > len(best[0])):
            best = (prefix, limits)
    return best[1] if best else None


def _read_cache(path: Path) -> dict[str, int]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): v for k, v in data.items() if isinstance(v, int) and v > 0}


def _write_cache(path: Path, data: dict[str, int]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".context_lengths.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(data, fh, indent=1, sort_keys=True)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
