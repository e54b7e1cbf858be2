"""Configuration of the skills curator (yaml section ``curator``), with Hermes Agent's names and defaults."""

from __future__ import annotations

import attrs
from attrs import validators as v

from config.validators import integer, positive_number

__all__ = ["CuratorBackupConfig", "CuratorConfig"]


@attrs.frozen
class CuratorBackupConfig:
    """``curator.backup``: the copy of the user's skills taken before a run changes any.

    Attributes:
        enabled: take it (a run whose pass fails is undone from it; without one nothing can be undone).
        keep: the newest this many copies are kept.
    """

    enabled: bool = attrs.field(default=True, validator=v.instance_of(bool))
    keep: int = attrs.field(default=5, validator=integer(ge=1, le=1_000))


@attrs.frozen
class CuratorConfig:
    """Section ``curator``: the daemon's periodic upkeep of the skills the agent wrote.

    Attributes:
        enabled: run it on its schedule (on by default, as in Hermes; ``skills curate`` runs it anyway).
        interval_hours: hours between runs; the first is one interval after the daemon first sees the home.
        stale_after_days: an agent-created skill unused this long is marked stale.
        archive_after_days: one unused this long is moved to ``skills/.archive`` (recoverable, never deleted).
        consolidate: also run the auxiliary model's pass that merges overlapping skills (off, as in Hermes).
        backup: the copy taken before a run changes anything.
    """

    enabled: bool = attrs.field(default=True, validator=v.instance_of(bool))
    interval_hours: float = attrs.field(default=168.0, validator=positive_number)
    stale_after_days: int = attrs.field(default=30, validator=integer(ge=1))
    archive_after_days: int = attrs.field(default=90, validator=integer(ge=1))
    consolidate: bool = attrs.field(default=False, validator=v.instance_of(bool))
    backup: CuratorBackupConfig = attrs.field(factory=CuratorBackupConfig, validator=v.instance_of(CuratorBackupConfig))
