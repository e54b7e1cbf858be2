"""What can go wrong with checkpoints."""

from __future__ import annotations

__all__ = ["CheckpointError", "CheckpointNotFound", "CheckpointSkipped"]


class CheckpointError(Exception):
    """Git failed, timed out or is missing, or the shadow repository cannot be used."""


class CheckpointNotFound(CheckpointError):
    """No checkpoint has the number asked for (or the directory has none)."""


class CheckpointSkipped(CheckpointError):
    """No snapshot was taken on purpose: the directory is too broad, has too many files, or is gone."""
