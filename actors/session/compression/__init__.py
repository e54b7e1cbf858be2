"""Context compression: prune, find boundaries, summarise, assemble, sanitise (docs/DECISIONS.md#d-compression)."""

from __future__ import annotations

from actors.session.compression.assembly import assemble, summary_instructions
from actors.session.compression.boundaries import Boundaries, find_boundaries
from actors.session.compression.compressor import (
    CompressionResult,
    CompressionStatistics,
    ContextCompressor,
    EstimateTokens,
    Summarize,
)
from actors.session.compression.pruning import PruneStats, prune_old_tool_results

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
