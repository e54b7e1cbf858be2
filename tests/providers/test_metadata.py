"""Model limits from config, table and overflow errors; token estimates."""

from __future__ import annotations

import json

import attrs
import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from messages.chat import HumanMessage, SystemMessage, messages_from_dicts
from config.providers import ModelConfig
from providers import ModelMetadata, parse_overflow_message
from providers.metadata import CACHE_FILE_NAME, DEFAULT_CONTEXT_LENGTH, HistorySize, bare_model_name, rough_tokens


class TestTable:
    """Well-known models resolve by longest prefix of the bare name."""

    @pytest.mark.parametrize(
        ("model", "context", "output"),
        [
            ("anthropic/claude-opus-4.6", 200_000, 128_000),
            ("claude-haiku-4-5-20251001", 200_000, 64_000),
            ("gpt-5.1", 400_000, 128_000),
            ("gpt-4o-mini", 128_000, 16_384),
            ("google/gemini-3-flash-preview", 1_048_576, 65_536),
            ("totally-unknown", DEFAULT_CONTEXT_LENGTH, 8_192),
        ],
    )
    def test_lookup(self, tmp_path, model, context, output):
        limits = ModelMetadata(tmp_path).limits(model)
        assert (limits.context_length, limits.max_output_tokens) == (context, output)

    def test_bare_name(self):
        assert bare_model_name("openrouter/anthropic/Claude-Opus-4.6") == "claude-opus-4-6"


class TestConfigOverride:
    """model.context_length / max_output_tokens win for the configured model only."""

    def test_override(self, tmp_path):
        meta = ModelMetadata(tmp_path, ModelConfig(default="my-local-model", context_length=32_000, max_output_tokens=4_000))
        assert meta.limits("my-local-model").context_length == 32_000
        assert meta.max_output_tokens("my-local-model") == 4_000
        assert meta.context_length("gpt-4o") == 128_000


class TestOverflowParsing:
    """Context limits and the room left for output are read from provider messages."""

    @pytest.mark.parametrize(
        ("message", "context", "available"),
        [
            ("This model's maximum context length is 128000 tokens. However, you requested 130000 tokens", 128_000, None),
            ("prompt is too long: 210500 tokens > 200000 maximum", 200_000, None),
            ("input length and `max_tokens` exceed context limit: 195000 + 8192 > 200000, decrease input length", 200_000, 5_000),
            ("exceeds the context window of 131,072 tokens", 131_072, None),
            ("context overflow, please shorten", None, None),
        ],
    )
    def test_parse(self, message, context, available):
        info = parse_overflow_message(message)
        assert (info.context_length, info.available_output) == (context, available)

    async def test_stated_limit_cached_on_disk(self, tmp_path):
        meta = ModelMetadata(tmp_path)
        await meta.record_overflow("vendor/odd-model", "maximum context length is 32768 tokens")
        assert meta.context_length("vendor/odd-model") == 32_768
        assert json.loads((tmp_path / CACHE_FILE_NAME).read_text()) == {"odd-model": 32_768}
        assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
        fresh = await ModelMetadata.open(tmp_path)
        assert fresh.context_length("odd-model") == 32_768

    async def test_concurrent_overflows_all_persist(self, tmp_path):
        meta = ModelMetadata(tmp_path)
        async with trio.open_nursery() as nursery:
            for n in range(8):
                nursery.start_soon(meta.record_overflow, f"model-{n}", f"maximum context length is {10_000 + n} tokens")
        assert json.loads((tmp_path / CACHE_FILE_NAME).read_text()) == {f"model-{n}": 10_000 + n for n in range(8)}

    async def test_guess_stays_in_memory(self, tmp_path):
        meta = ModelMetadata(tmp_path)
        await meta.record_overflow("mystery", "too many tokens")
        assert meta.context_length("mystery") == 64_000
        await meta.record_overflow("mystery", "too many tokens")
        assert meta.context_length("mystery") == 32_000
        assert not (tmp_path / CACHE_FILE_NAME).exists()
        fresh = ModelMetadata(tmp_path)
        await fresh.load()
        assert fresh.context_length("mystery") == DEFAULT_CONTEXT_LENGTH

    async def test_guess_overrides_table_and_stated_limit_overrides_guess(self, tmp_path):
        meta = ModelMetadata(tmp_path)
        assert meta.context_length("claude-sonnet-4-5") == 200_000
        await meta.record_overflow("claude-sonnet-4-5", "prompt is too long")
        assert meta.context_length("claude-sonnet-4-5") == 128_000
        await meta.record_overflow("claude-sonnet-4-5", "prompt is too long: 150000 tokens > 140000 maximum")
        assert meta.context_length("claude-sonnet-4-5") == 140_000

    async def test_available_output_lowers_cap(self, tmp_path):
        meta = ModelMetadata(tmp_path)
        assert meta.max_output_tokens("claude-sonnet-4-5") == 64_000
        await meta.record_overflow("claude-sonnet-4-5", "exceed context limit: 195000 + 64000 > 200000")
        assert meta.max_output_tokens("claude-sonnet-4-5") == 5_000

    async def test_corrupt_cache_is_ignored(self, tmp_path):
        (tmp_path / CACHE_FILE_NAME).write_text("{not json")
        meta = ModelMetadata(tmp_path)
        await meta.load()
        assert meta.context_length("gpt-4o") == 128_000


class TestEstimates:
    """chars/4, kept up to date as a history changes."""

    def test_rough(self):
        msgs = [{"role": "user", "content": "x" * 400}]
        assert rough_tokens(messages_from_dicts(msgs)) == len(json.dumps(msgs)) // 4

    @given(st.lists(st.tuples(st.sampled_from(["append", "replace_last", "replace_all"]), st.text(max_size=30)), max_size=25))
    @settings(max_examples=150, deadline=None)
    def test_history_size_follows_a_changing_history(self, steps):
        # What a session does to its history: messages appended, the last one replaced by a copy
        # (steers, budget notes), the whole list replaced (compaction).
        size, history = HistorySize(), [SystemMessage("é" * 3)]
        for step, text in steps:
            if step == "append":
                history.append(HumanMessage(text, {"n": [1.5, None]}))
            elif step == "replace_last":
                history[-1] = attrs.evolve(history[-1], content=f"{history[-1].content}\n{text}")
            else:
                history = [HumanMessage(text), *history[-2:]]
            assert size.tokens(history) == rough_tokens(history)
