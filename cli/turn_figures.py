"""Usage figures for people: ``/usage`` and the one-line footer after each turn.

``/usage`` reads the wire ``UsageUpdated`` dict (the session's running totals); the footer
reads ``TurnFinished``, which carries the turn's own figures.
A cost of None means the model has no known price: it reads "n/a", never 0.
"""

from __future__ import annotations

from typing import Any

__all__ = ["footer_text", "usage_text"]


def _cost(value: float | None) -> str:
    return "n/a" if value is None else f"${value:.4f}"


def _tokens(count: int) -> str:
    return f"{count / 1000:.1f}k" if count >= 10_000 else str(count)


def usage_text(usage: dict[str, Any] | None) -> str:
    """The session's usage so far: tokens, cost, cache hits, context against the window."""
    if usage is None:
        return "no usage reported yet"
    prompt = int(usage.get("prompt_tokens", 0))
    cache_read = int(usage.get("cache_read_tokens", 0))
    hit = f" ({100 * cache_read / prompt:.0f}% of prompt)" if prompt else ""
    context = int(usage.get("context_tokens", 0))
    window = usage.get("context_window")
    used = f"{context} of {window} ({100 * context / window:.0f}%)" if window else f"{context} (window unknown)"
    return "\n".join((
        f"tokens   prompt {prompt} · completion {usage.get('completion_tokens', 0)} · "
        f"reasoning {usage.get('reasoning_tokens', 0)} · api calls {usage.get('api_calls', 0)}",
        f"cache    read {cache_read}{hit} · write {usage.get('cache_write_tokens', 0)}",
        f"context  {used}",
        f"cost     {_cost(usage.get('cost_usd'))}",
    ))


def footer_text(finished: dict[str, Any]) -> str:
    """One line after a turn (a wire ``TurnFinished``, which carries the turn's own figures): its
    tokens in and out, its cost, and how long it ran."""
    tokens_in, tokens_out = int(finished.get("prompt_tokens", 0)), int(finished.get("completion_tokens", 0))
    seconds = float(finished.get("duration_seconds", 0.0))
    return f"{_tokens(tokens_in)} in · {_tokens(tokens_out)} out · {_cost(finished.get('cost_usd'))} · {seconds:.1f}s"
