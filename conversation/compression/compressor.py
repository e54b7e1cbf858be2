"""The context compressor: when to compress, and the five phases (docs/DECISIONS.md#d-compression).

One compressor belongs to one session. It keeps what must survive between passes: the previous
summary (later passes update it instead of starting over), the count of ineffective passes
(anti-thrashing) and the budgets derived from the current model's context window.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Awaitable, Callable, Sequence

import attrs
import trio

from conversation.compression.assembly import assemble, summary_instructions
from conversation.compression.boundaries import find_boundaries
from conversation.compression.pruning import PruneStats, prune_old_tool_results
from conversation.compression.texts import FALLBACK_WARNING, STATIC_FALLBACK, THRASHING_WARNING
from conversation.errors import CompressionError
from config.session import CompressionConfig
from messages.chat import ChatMessage
from tools.redact import redact_secrets

log = logging.getLogger(__name__)

Summarize = Callable[[list[ChatMessage], str], Awaitable[str]]
EstimateTokens = Callable[[Sequence[ChatMessage]], int]

# A summary may use at most this share of the context window.
SUMMARY_CONTEXT_SHARE = 0.05


@attrs.frozen
class CompressionResult:
    """The outcome of one compression pass."""

    messages: list[ChatMessage]
    # The summary text as generated (the static fallback text when summarisation failed).
    summary: str
    tokens_before: int
    tokens_after: int
    # How many messages were replaced by the summary.
    summarised_count: int
    fallback_used: bool = False
    # Something the user should see: a failed summary or paused automatic compression.
    warning: str | None = None
    pruned: PruneStats = PruneStats()

    @property
    def savings(self) -> float:
        """Share of tokens saved, 0..1."""
        return 0.0 if self.tokens_before <= 0 else max(self.tokens_before - self.tokens_after, 0) / self.tokens_before


@attrs.frozen
class _Prepared:
    """Output of phases 1-2: the pruned history, where to cut it, and the summariser's instructions."""

    tokens_before: int
    head_end: int
    tail_start: int
    messages: list[ChatMessage]
    stats: PruneStats
    instructions: str


@attrs.frozen
class CompressionStatistics:
    """A snapshot of a compressor for inspection."""

    context_length: int
    threshold_tokens: int
    tail_budget_tokens: int
    compressions: int
    ineffective_in_a_row: int
    paused: bool


class ContextCompressor:
    """Decides when a session's history is compressed and compresses it."""

    def __init__(
        self,
        config: CompressionConfig,
        *,
        context_length: int,
        summarize: Summarize,
        estimate_tokens: EstimateTokens,
        today: Callable[[], datetime.date] = datetime.date.today,
    ) -> None:
        """Args:
        config: the ``compression`` section.
        context_length: the current model's context window in tokens.
        summarize: async ``(messages, instructions) -> summary``; the session wires it to the auxiliary model.
        estimate_tokens: token estimate of a list of messages (sessions pass ``providers.metadata.rough_tokens``).
        today: the local date, which the summary anchors finished work to.
        """
        self._config = config
        self._summarize = summarize
        self._estimate = estimate_tokens
        self._today = today
        self.previous_summary: str | None = None
        self._ineffective = 0
        self._compressions = 0
        self.update_model(context_length)

    def update_model(self, context_length: int) -> None:
        """Recompute the budgets for a new model's context window (for example after a fallback)."""
        if context_length <= 0:
            raise ValueError(f"context_length must be positive, got {context_length}")
        self.context_length = context_length
        self.threshold_tokens = max(int(context_length * self._config.threshold), self._config.minimum_threshold_tokens)
        self.tail_budget = int(self.threshold_tokens * self._config.target_ratio)
        self.max_summary_tokens = max(
            min(int(context_length * SUMMARY_CONTEXT_SHARE), self._config.summary_max_tokens), 1
        )

    @property
    def paused(self) -> bool:
        """Whether automatic compression stopped after repeated ineffective passes."""
        return self._ineffective >= self._config.max_ineffective

    def should_compress(self, prompt_tokens: int) -> bool:
        """Whether the history (``prompt_tokens`` long) should be compressed automatically now."""
        return self._config.enabled and prompt_tokens >= self.threshold_tokens and not self.paused

    def statistics(self) -> CompressionStatistics:
        """A frozen snapshot for the session's inspection report."""
        return CompressionStatistics(
            context_length=self.context_length,
            threshold_tokens=self.threshold_tokens,
            tail_budget_tokens=self.tail_budget,
            compressions=self._compressions,
            ineffective_in_a_row=self._ineffective,
            paused=self.paused,
        )

    def _summary_budget(self, tokens: int) -> int:
        proportional = int(tokens * self._config.summary_ratio)
        return min(max(proportional, self._config.summary_min_tokens), self.max_summary_tokens)

    def _prepare(self, messages: Sequence[ChatMessage], focus: str | None) -> _Prepared:
        """Phases 1-2 and the summariser's instructions (CPU work, run in a thread)."""
        tokens_before = self._estimate(messages)
        bounds = find_boundaries(
            messages,
            protect_first_n=self._config.protect_first_n,
            tail_budget=self.tail_budget,
            min_tail=self._config.protect_last_n,
            tokens=lambda m: self._estimate([m]),
        )
        pruned, stats = prune_old_tool_results(messages, bounds.tail_start, start=bounds.head_end)
        middle = pruned[bounds.head_end : bounds.tail_start]
        instructions = summary_instructions(
            budget_tokens=self._summary_budget(self._estimate(middle)),
            today=self._today(),
            previous_summary=self.previous_summary,
            focus=focus,
        )
        return _Prepared(tokens_before, bounds.head_end, bounds.tail_start, pruned, stats, instructions)

    async def compress(self, messages: Sequence[ChatMessage], *, focus: str | None = None) -> CompressionResult:
        """Compress ``messages`` (phases 1-5) and return the new history.

        Args:
            messages: the whole history, system prompt first when there is one.
            focus: an optional topic (``/compress TOPIC``) the summary should favour.

        Raises:
            CompressionError: when there is nothing between the protected head and tail to summarise.
        """
        prepared = await trio.to_thread.run_sync(self._prepare, messages, focus)
        middle = prepared.messages[prepared.head_end : prepared.tail_start]
        if not middle:
            self._record(0.0)
            count = len(prepared.messages)
            raise CompressionError(
                f"nothing to compress yet: all {count} messages are kept as they are (the first {prepared.head_end}, "
                f"and the newest {count - prepared.tail_start}: at least {self._config.protect_last_n} messages and "
                f"~{self.tail_budget:,} tokens); it needs more conversation between them"
            )
        warning: str | None = None
        try:
            summary = redact_secrets((await self._summarize(middle, prepared.instructions)).strip())
            if not summary:
                raise CompressionError("the summariser returned an empty summary")
        except Exception as exc:  # any failure of the auxiliary model falls back; cancellation still propagates
            log.warning("compression summary failed, using the static fallback: %s: %s", type(exc).__name__, redact_secrets(str(exc)))
            summary = STATIC_FALLBACK.format(dropped=len(middle))
            warning = FALLBACK_WARNING.format(dropped=len(middle), error=type(exc).__name__)
            fallback = True
        else:
            self.previous_summary = summary
            fallback = False

        def finish() -> tuple[list[ChatMessage], int]:
            rebuilt = assemble(prepared.messages[: prepared.head_end], summary, prepared.messages[prepared.tail_start :])
            return rebuilt, self._estimate(rebuilt)

        new_messages, tokens_after = await trio.to_thread.run_sync(finish)
        result = CompressionResult(
            messages=new_messages,
            summary=summary,
            tokens_before=prepared.tokens_before,
            tokens_after=tokens_after,
            summarised_count=len(middle),
            fallback_used=fallback,
            warning=warning,
            pruned=prepared.stats,
        )
        self._compressions += 1
        self._record(result.savings)
        if self.paused and warning is None:
            result = attrs.evolve(result, warning=self.thrashing_warning())
        return result

    def _record(self, savings: float) -> None:
        self._ineffective = self._ineffective + 1 if savings < self._config.min_savings else 0

    def thrashing_warning(self) -> str:
        """The message telling the user automatic compression is paused."""
        return THRASHING_WARNING.format(count=self._ineffective, percent=round(self._config.min_savings * 100))

    def reset_thrashing(self) -> None:
        """Allow automatic compression again (after a manual compression with a topic, or a new model)."""
        self._ineffective = 0
