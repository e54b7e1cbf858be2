"""The price table, model matching and the cost of one call's usage."""

from __future__ import annotations

import pytest

from config.pricing import ModelPrice
from providers.pricing import PRICES, estimate_cost, price_for
from providers.types import Usage

MILLION = 1_000_000


class TestMatching:
    """A model is found by exact id, by its OpenRouter id, or without a date suffix; else it has no price."""

    @pytest.mark.parametrize(
        ("model", "entry"),
        [
            ("gpt-4.1", "gpt-4-1"),
            ("gpt-4.1-2025-04-14", "gpt-4-1"),
            ("gpt-4.1-mini", "gpt-4-1-mini"),
            ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
            ("openai/gpt-4o", "gpt-4o"),
            ("o4-mini", "o4-mini"),
            ("gpt-5-mini", "gpt-5-mini"),
            ("claude-sonnet-4-20250514", "claude-sonnet-4"),
            ("anthropic/claude-sonnet-4.5", "claude-sonnet-4-5"),
            ("claude-opus-4-1-20250805", "claude-opus-4-1"),
            ("claude-3-5-haiku-latest", "claude-3-5-haiku"),
        ],
    )
    def test_known(self, model: str, entry: str) -> None:
        assert price_for(model) == PRICES[entry]

    @pytest.mark.parametrize("model", ["scripted-model", "gpt-4o-audio-preview", "llama-3-70b", "gpt-4", ""])
    def test_unknown_has_no_price(self, model: str) -> None:
        assert price_for(model) is None
        assert estimate_cost(model, Usage(prompt_tokens=10, completion_tokens=10)) is None

    def test_openrouter_free_variant_costs_nothing(self) -> None:
        assert estimate_cost("meta-llama/llama-3.3-70b-instruct:free", Usage(prompt_tokens=MILLION)) == 0.0

    def test_configured_price_wins(self) -> None:
        mine = ModelPrice(input=1.0, output=2.0)
        assert price_for("gpt-4.1", {"gpt-4.1": mine}) == mine
        assert price_for("my-org/custom-model", {"my-org/custom-model": mine}) == mine
        assert price_for("custom-model-2025-01-31", {"custom-model": mine}) == mine


class TestEstimate:
    """Fresh input, cache reads, cache writes and output are each billed at their price."""

    def test_openai_cached_input(self) -> None:
        usage = Usage(prompt_tokens=MILLION, completion_tokens=MILLION, cache_read_tokens=MILLION // 2)
        # gpt-4.1: half a million fresh at $2, half a million cached at $0.50, a million out at $8.
        assert estimate_cost("gpt-4.1", usage) == pytest.approx(1.0 + 0.25 + 8.0)

    def test_anthropic_cache_write_and_read(self) -> None:
        usage = Usage(prompt_tokens=3 * MILLION, completion_tokens=0, cache_read_tokens=MILLION, cache_write_tokens=MILLION)
        # claude-sonnet-4: $3 fresh, $0.30 read, $3.75 write.
        assert estimate_cost("claude-sonnet-4", usage) == pytest.approx(3.0 + 0.30 + 3.75)

    def test_unset_cache_prices_bill_as_input(self) -> None:
        usage = Usage(prompt_tokens=2 * MILLION, cache_read_tokens=MILLION)
        assert estimate_cost("m", usage, {"m": ModelPrice(input=4.0, output=0.0)}) == pytest.approx(8.0)

    def test_no_tokens_no_cost(self) -> None:
        assert estimate_cost("gpt-4o", Usage()) == 0.0
