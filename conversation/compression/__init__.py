"""Context compression: prune, find boundaries, summarise, assemble, sanitise (docs/DECISIONS.md#d-compression)."""

from __future__ import annotations

from conversation.compression.assembly import assemble, summary_instructions
from conversation.compression.boundaries import Boundaries, find_boundaries
from conversation.compression.compressor import (
    CompressionResult,
    CompressionStatistics,
    ContextCompressor,
    EstimateTokens,
    Summarize,
)
from conversation.compression.pruning import PruneStats, prune_old_tool_results

__all__ = [
    "Boundaries",
    "CompressionResult",
    "CompressionStatistics",
    "ContextCompressor",
    "EstimateTokens",
    "PruneStats",
    "Summarize",
    "assemble",
    "find_boundaries",
    "prune_old_tool_results",
    "summary_instructions",
]
