"""Configuration of filesystem checkpoints (yaml section ``checkpoints``), as Hermes Agent names them."""

from __future__ import annotations

import attrs
from attrs import validators as v

from config.validators import integer, positive_int

__all__ = ["CheckpointsConfig"]


@attrs.frozen
class CheckpointsConfig:
    """Section ``checkpoints``: snapshots of a session's working directory before the agent changes it.

    Attributes:
        enabled: take them (off by default, as in Hermes Agent 0.19).
        max_snapshots: the newest this many are kept per working directory.
        max_total_size_mb: a working directory's shadow repository is kept under this size by dropping
            its oldest snapshots (0: no cap).
        max_file_size_mb: a file larger than this is left out of the snapshots (0: no cap).
    """

    enabled: bool = attrs.field(default=False, validator=v.instance_of(bool))
    max_snapshots: int = attrs.field(default=20, validator=positive_int)
    max_total_size_mb: int = attrs.field(default=500, validator=integer(ge=0))
    max_file_size_mb: int = attrs.field(default=10, validator=integer(ge=0))
