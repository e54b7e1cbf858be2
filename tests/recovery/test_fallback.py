"""The fallback chain moves one way through the configured providers."""

from __future__ import annotations

from messages.chat import AssistantMessage, ChatMessage, message_to_dict, messages_from_dicts
from config.recovery import FallbackProviderConfig
from providers.recovery import FallbackChain, ProviderTarget, strip_reasoning


class TestFallbackChain:
    """Advancing walks the list once; duplicates of the primary are skipped."""

    def test_from_config_resolves_modes_and_advances(self) -> None:
        primary = ProviderTarget.resolve("openrouter", "a/b", "https://openrouter.ai/api/v1")
        chain = FallbackChain.from_config(
            primary,
            [
                FallbackProviderConfig(provider="openrouter", model="a/b", base_url="https://openrouter.ai/api/v1"),
                FallbackProviderConfig(provider="anthropic", model="claude-x"),
                FallbackProviderConfig(provider="custom", model="m", base_url="http://h/anthropic"),
            ],
        )
        assert chain.current.api_mode == "chat_completions"
        assert [t.label for t in chain.remaining] == ["anthropic/claude-x", "custom/m"]
        assert chain.advance() == ProviderTarget("anthropic", "claude-x", None, "anthropic_messages")
        assert chain.advance().api_mode == "anthropic_messages"  # type: ignore[union-attr]  # not None here, or the assertion fails, as it should
        assert not chain.has_next()
        assert chain.advance() is None
        assert chain.current.label == "custom/m" and chain.position == 2


class TestDefaultEndpoint:
    """A provider the SDKs do not know gets its own endpoint when none is configured."""

    def test_openrouter_without_base_url_goes_to_openrouter(self) -> None:
        assert ProviderTarget.resolve("openrouter", "a/b").base_url == "https://openrouter.ai/api/v1"

    def test_configured_url_wins_and_others_keep_the_sdk_default(self) -> None:
        assert ProviderTarget.resolve("openrouter", "a/b", "http://proxy/v1").base_url == "http://proxy/v1"
        assert ProviderTarget.resolve("openai", "gpt-4.1").base_url is None


class TestStripReasoning:
    """Level 3 removes reasoning from assistant turns only, without touching the input."""

    def test_strip(self) -> None:
        history = messages_from_dicts([
            {"role": "user", "content": "hi", "reasoning": "user field kept"},
            {
                "role": "assistant",
                "content": "x",
                "reasoning": "r",
                "anthropic_content": [{"type": "thinking", "thinking": "r", "signature": "sig"}, {"type": "text", "text": "x"}],
                "responses_items": [{"type": "reasoning", "id": "rs_1"}, {"type": "function_call", "call_id": "c"}],
            },
        ])
        clean, changed = strip_reasoning(history)
        assert changed
        assert clean[0] == history[0]
        assert message_to_dict(clean[1]) == {
            "role": "assistant",
            "content": "x",
            "anthropic_content": [{"type": "text", "text": "x"}],
            "responses_items": [{"type": "function_call", "call_id": "c"}],
        }
        assert message_to_dict(history[1])["reasoning"] == "r"

    def test_nothing_to_strip(self) -> None:
        history: list[ChatMessage] = [AssistantMessage("x")]
        assert strip_reasoning(history) == (history, False)
