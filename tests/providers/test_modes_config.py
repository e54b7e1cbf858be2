"""API mode resolution in the specification's order, and the config sections' validation."""

from __future__ import annotations

import attrs
import pytest

from config.providers import AuxiliaryConfig, ModelConfig, PromptCachingConfig, StreamingConfig
from providers import ChatRequest, ProviderConfigError, resolve_api_mode, uses_developer_role


class TestResolveApiMode:
    """Explicit, then provider, then base URL heuristics, then chat_completions."""

    @pytest.mark.parametrize(
        ("explicit", "provider", "base_url", "mode"),
        [
            ("codex_responses", "anthropic", "https://api.anthropic.com", "codex_responses"),
            (None, "anthropic", "https://openrouter.ai/api/v1", "anthropic_messages"),
            (None, "openai-codex", None, "codex_responses"),
            (None, None, "https://api.anthropic.com/v1", "anthropic_messages"),
            (None, "custom", "https://proxy.example/api/anthropic", "anthropic_messages"),
            (None, "custom", "https://proxy.example/api/anthropic/", "anthropic_messages"),
            (None, None, "https://chatgpt.com/backend-api/codex", "codex_responses"),
            (None, "openrouter", "https://openrouter.ai/api/v1", "chat_completions"),
            (None, None, None, "chat_completions"),
            (None, None, "https://notanthropic.com.evil/v1", "chat_completions"),
        ],
    )
    def test_resolution(self, explicit, provider, base_url, mode):
        assert resolve_api_mode(explicit, provider, base_url) == mode

    def test_unknown_explicit_mode(self):
        with pytest.raises(ProviderConfigError, match="unknown api_mode"):
            resolve_api_mode("bedrock_converse", None, None)

    @pytest.mark.parametrize(("model", "developer"), [("gpt-5", True), ("openai/gpt-5.1", True), ("gpt-5-codex", True), ("gpt-4o", False), ("claude-opus-4.6", False)])
    def test_developer_role_models(self, model, developer):
        assert uses_developer_role(model) is developer


class TestConfigSections:
    """Defaults come from the specification; bad values are errors."""

    def test_defaults(self):
        assert StreamingConfig() == StreamingConfig(stale_timeout_seconds=90, read_timeout_seconds=60, connect_timeout_seconds=10)
        assert PromptCachingConfig().cache_ttl == "5m"
        assert ModelConfig().api_mode is None
        assert AuxiliaryConfig().model is None

    @pytest.mark.parametrize(
        "build",
        [
            lambda: StreamingConfig(stale_timeout_seconds=0),
            lambda: StreamingConfig(read_timeout_seconds=-1),
            lambda: StreamingConfig(connect_timeout_seconds=True),
            lambda: PromptCachingConfig(cache_ttl="10m"),
            lambda: ModelConfig(api_mode="bedrock"),
            lambda: ModelConfig(context_length=0),
            lambda: ModelConfig(max_output_tokens="big"),
            lambda: ChatRequest(messages=[], tools=[], model="m", cache_ttl="2h"),
            lambda: ChatRequest(messages=[], tools=[], model="m", max_tokens=0),
            lambda: ChatRequest(messages=[], tools=[], model="m", temperature=-0.5),
        ],
    )
    def test_invalid(self, build):
        with pytest.raises((ValueError, TypeError)):
            build()

    def test_frozen(self):
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            StreamingConfig().stale_timeout_seconds = 1
