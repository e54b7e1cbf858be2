"""What a model call costs: list prices per million tokens, and the estimate for one call's usage.

Prices are the providers' public list prices in US dollars per million tokens, as
published on openai.com/api/pricing and anthropic.com/pricing (checked 2025-08;
OpenRouter passes these models through at the same list prices). They change: a
user sets their own, or prices a model the table does not know, in
``config.yaml``'s ``pricing:`` section (see :class:`config.pricing.ModelPrice`).

- OpenAI bills cached input at the "cached input" price and charges nothing extra
  for writing the cache, so its cache-write price is the input price.
- Anthropic bills a 5-minute cache write at 1.25 times the input price and a
  cache read at a tenth of it.

A model is found by its bare name (``anthropic/claude-sonnet-4.5`` and
``claude-sonnet-4-5`` are one entry): the exact id first, then the id without a
date suffix (``gpt-4.1-2025-04-14``, ``claude-sonnet-4-20250514``, ``-latest``).
A model found nowhere has no price: its cost is None, shown "n/a", never 0.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

from config.pricing import ModelPrice
from providers.metadata import bare_model_name
from providers.types import Usage

__all__ = ["PRICES", "estimate_cost", "price_for"]

_PER_TOKEN = 1_000_000


def _openai(input_price: float, cached: float, output: float) -> ModelPrice:
    return ModelPrice(input=input_price, output=output, cache_read=cached, cache_write=input_price)


def _anthropic(input_price: float, output: float) -> ModelPrice:
    return ModelPrice(input=input_price, output=output, cache_read=input_price / 10, cache_write=input_price * 1.25)


#: List prices by bare model name (see :func:`providers.metadata.bare_model_name`).
PRICES: Mapping[str, ModelPrice] = MappingProxyType(
    {
        "gpt-5": _openai(1.25, 0.125, 10.00),
        "gpt-5-mini": _openai(0.25, 0.025, 2.00),
        "gpt-5-nano": _openai(0.05, 0.005, 0.40),
        "gpt-4-1": _openai(2.00, 0.50, 8.00),
        "gpt-4-1-mini": _openai(0.40, 0.10, 1.60),
        "gpt-4-1-nano": _openai(0.10, 0.025, 0.40),
        "gpt-4o": _openai(2.50, 1.25, 10.00),
        "gpt-4o-mini": _openai(0.15, 0.075, 0.60),
        "o3": _openai(2.00, 0.50, 8.00),
        "o3-mini": _openai(1.10, 0.55, 4.40),
        "o4-mini": _openai(1.10, 0.275, 4.40),
        "claude-opus-4-1": _anthropic(15.00, 75.00),
        "claude-opus-4": _anthropic(15.00, 75.00),
        "claude-sonnet-4-5": _anthropic(3.00, 15.00),
        "claude-sonnet-4": _anthropic(3.00, 15.00),
        "claude-3-7-sonnet": _anthropic(3.00, 15.00),
        "claude-3-5-sonnet": _anthropic(3.00, 15.00),
        "claude-3-5-haiku": _anthropic(0.80, 4.00),
    }
)

# A dated release (-2025-04-14, -20250514) or a moving alias of one entry.
_RELEASE_SUFFIX = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{8}|latest)$")
_FREE = ModelPrice(input=0.0, output=0.0, cache_read=0.0, cache_write=0.0)


def price_for(model: str, overrides: Mapping[str, ModelPrice] | None = None) -> ModelPrice | None:
    """``model``'s price: a ``pricing:`` entry (by the exact id as written, then by bare
    name), else the table; None when neither knows it."""
    table = overrides or {}
    if model in table:
        return table[model]
    name, _, variant = bare_model_name(model).partition(":")
    if variant == "free":
        return _FREE  # OpenRouter's free variants
    configured = {bare_model_name(key): value for key, value in table.items()}
    for candidate in (name, _RELEASE_SUFFIX.sub("", name)):
        found = configured.get(candidate) or PRICES.get(candidate)
        if found is not None:
            return found
    return None


def estimate_cost(
    model: str, usage: Usage, overrides: Mapping[str, ModelPrice] | None = None
) -> float | None:
    """The estimated cost in US dollars of one call of ``model`` that used ``usage``; None: no price.

    ``usage.prompt_tokens`` counts cached tokens too (see :class:`providers.types.Usage`):
    those are billed at the cache prices, the rest at the input price.
    """
    price = price_for(model, overrides)
    if price is None:
        return None
    fresh = max(0, usage.prompt_tokens - usage.cache_read_tokens - usage.cache_write_tokens)
    cache_read = price.input if price.cache_read is None else price.cache_read
    cache_write = price.input if price.cache_write is None else price.cache_write
    dollars = (
        fresh * price.input
        + usage.cache_read_tokens * cache_read
        + usage.cache_write_tokens * cache_write
        + usage.completion_tokens * price.output
    )
    return dollars / _PER_TOKEN
