"""What a session hands each turn and what it gets back.

- :class:`TurnConfig`: frozen for the turn's life (its tools, its model, its
  limits, the session's callbacks);
- :class:`TurnCounters`: what the turn counts; the session owns it and reads
  it after the turn, whether the turn returned or failed;
- :class:`TurnOutcome`: what the turn returns: the whole history and how it ended;
- :class:`TokenMeter`: tokens of a turn tree against the turn's token budget.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import attrs

from providers.metadata import HistorySize
from providers.types import Usage

if TYPE_CHECKING:
    from actors.session.context import SessionServices
    from actors.session.hub import EventHub
    from actors.session.model import SessionModel
    from actors.session.options import SessionDeps, SessionOptions
    from actors.session.state import FrozenTools, SessionState
    from actors.session.workers import ToolExecutor

__all__ = ["Persist", "PreflightCompress", "TokenMeter", "TurnConfig", "TurnCounters", "ToolServices", "TurnOutcome", "add_cost", "add_usage"]

#: The session's preflight compression: (history, its size in tokens) -> the compacted history or None.
PreflightCompress = Callable[[list[dict[str, Any]], int], Awaitable[list[dict[str, Any]] | None]]
#: Commits messages the turn added to the session's history and the store.
Persist = Callable[[list[dict[str, Any]]], Awaitable[None]]
#: What the session offers a batch of tool calls about to run (an ephemeral session stores its row and
#: opens its jail at the first).
ToolServices = Callable[[], Awaitable["SessionServices"]]


def add_usage(total: Usage, more: Usage) -> Usage:
    """``total`` with ``more`` added, field by field."""
    return Usage(
        prompt_tokens=total.prompt_tokens + more.prompt_tokens,
        completion_tokens=total.completion_tokens + more.completion_tokens,
        cache_read_tokens=total.cache_read_tokens + more.cache_read_tokens,
        cache_write_tokens=total.cache_write_tokens + more.cache_write_tokens,
        reasoning_tokens=total.reasoning_tokens + more.reasoning_tokens,
    )


def add_cost(total: float | None, more: float | None) -> float | None:
    """Two estimated costs added; None (no price known) only when both are None."""
    if total is None:
        return more
    return total if more is None else total + more


class TokenMeter:
    """Tokens used by a turn tree (a turn, its sandboxes and its subagents'
    turns); going over the limit calls ``on_exceeded`` (the turn interrupts its
    work) with reason budget."""

    def __init__(self, limit: int | None, parent: TokenMeter | None = None) -> None:
        self.limit = limit
        self.parent = parent
        self.used = 0
        self.on_exceeded: Callable[[str], None] | None = None

    def add(self, tokens: int) -> None:
        """Count ``tokens`` here and in every ancestor."""
        self.used += tokens
        if self.limit is not None and self.used > self.limit and self.on_exceeded is not None:
            self.on_exceeded(f"budget: {self.used} tokens > {self.limit}")
        if self.parent is not None:
            self.parent.add(tokens)

    @property
    def exceeded(self) -> bool:
        """True once the limit was passed."""
        return self.limit is not None and self.used > self.limit


@attrs.frozen
class TurnConfig:
    """What a turn works with; fixed for its life.

    Attributes:
        deps / options: the daemon's shared parts and the session's settings; a
            per-session setting reaches the turn through ``options`` alone.
        hub: the session's event hub.
        tool_services: what the session offers tool calls (requests, capabilities, its jail), asked
            before each batch.
        executor: the session's tool-execution path (guardrails, dispatch).
        model: the session's provider chain and the active model's limits.
        tools: the session's frozen tool list.
        usage_before: the session's usage before this turn (usage events report totals).
        cost_before: the session's estimated cost before this turn (None: no priced call yet).
        api_calls_before: the session's provider calls before this turn.
        ephemeral_system: a client's system layer, added to each request only.
        persist: commits the turn's new messages.
        compress: the preflight compression (None: compression is off).
        history_size: the size estimate of the session's history, kept from call to call.
    """

    deps: SessionDeps
    options: SessionOptions
    hub: EventHub
    tool_services: ToolServices
    executor: ToolExecutor
    model: SessionModel
    tools: FrozenTools
    usage_before: Usage
    persist: Persist
    cost_before: float | None = None
    api_calls_before: int = 0
    ephemeral_system: str | None = None
    compress: PreflightCompress | None = None
    history_size: HistorySize = attrs.Factory(HistorySize)

    @property
    def max_iterations(self) -> int:
        """Provider calls this turn may make before its grace call."""
        return self.options.max_iterations or self.deps.config.agent.max_turns


@attrs.define
class TurnCounters:
    """What one turn counts; owned by the session that runs the turn.

    Attributes:
        usage: this turn's tokens.
        cost_usd: this turn's estimated cost (None: no call of it had a known price).
        api_calls: this turn's provider calls.
        meter: the turn's token budget (its subagents and sandboxes count into it).
        started_at: when the turn started (Trio's clock).
    """

    meter: TokenMeter
    started_at: float = 0.0
    usage: Usage = Usage()
    cost_usd: float | None = None
    api_calls: int = 0

    def add_to(self, state: SessionState) -> None:
        """Add the turn's tokens, cost and provider calls to the session's totals."""
        state.usage = add_usage(state.usage, self.usage)
        state.cost_usd = add_cost(state.cost_usd, self.cost_usd)
        state.api_calls += self.api_calls

    def figures(self, now: float) -> dict[str, Any]:
        """The turn's own figures as ``TurnFinished`` carries them, the turn ending at ``now``."""
        return {
            "duration_seconds": now - self.started_at, "prompt_tokens": self.usage.prompt_tokens,
            "completion_tokens": self.usage.completion_tokens, "cost_usd": self.cost_usd,
        }


@attrs.frozen
class TurnOutcome:
    """How a turn ended.

    Attributes:
        messages: the whole history as the turn left it (valid for every provider).
        final_text: the answer shown to the user.
        reason: completed, interrupted, budget or error.
        error: what went wrong, when ``reason`` is error.
    """

    messages: list[dict[str, Any]]
    final_text: str
    reason: str = "completed"
    error: str | None = None
