"""The control conversation's request to run the skills curator (``hermes-actors skills curate``) and its
reply. Part of :mod:`messages.control`, whose unions include them."""

from __future__ import annotations

import attrs

__all__ = ["CurateReply", "CurateRequest", "CuratorChange"]


@attrs.frozen
class CurateRequest:
    """Run a curator pass now, whatever its schedule; the reply is :class:`CurateReply` when it is over.

    ``dry_run``: change nothing, say what would change. ``consolidate``: run the model's merging pass
    (None: as ``curator.consolidate`` says).
    """

    request_id: str
    dry_run: bool = False
    consolidate: bool | None = None


@attrs.frozen
class CuratorChange:
    """One change a pass made (or would make): its action (archive, stale, patch, create ...), the skill's
    name, and why."""

    action: str
    skill: str
    reason: str = ""


@attrs.frozen
class CurateReply:
    """What the pass did: its changes, a one-line summary, the backup taken before it, and the error that
    made it undo everything (None: it did not fail)."""

    request_id: str
    dry_run: bool
    changes: list[CuratorChange] = attrs.Factory(list)
    summary: str = ""
    backup: str | None = None
    error: str | None = None
