"""The control conversation's request about a session's checkpoints (``hermes-actors checkpoints``,
attach's ``/rollback``) and its reply. Part of :mod:`messages.control`, whose unions include them."""

from __future__ import annotations

import attrs

__all__ = ["CHECKPOINT_ACTIONS", "CheckpointReply", "CheckpointRequest", "CheckpointView"]

#: What a :class:`CheckpointRequest` may ask.
CHECKPOINT_ACTIONS = ("list", "diff", "restore")


@attrs.frozen
class CheckpointRequest:
    """List, diff or restore the checkpoints of a session's working directory; the reply is
    :class:`CheckpointReply`.

    ``number`` names a checkpoint as the list numbers them, 1 the newest (``diff`` and ``restore``).
    A restore first snapshots the directory as it is, so it can itself be undone.
    """

    request_id: str
    action: str
    session_id: str
    number: int = 1


@attrs.frozen
class CheckpointView:
    """One checkpoint: its number (1 the newest), commit, time taken (epoch seconds), why it was taken,
    and how many files differ from the one before it."""

    number: int
    commit: str
    taken_at: float
    reason: str
    files_changed: int = 0


@attrs.frozen
class CheckpointReply:
    """The checkpoints of ``workdir`` as they are after the request.

    ``target`` is the checkpoint a diff compared with, or the one a restore went back to; ``diff`` (action
    diff) is a stat then a patch, cut when ``truncated``; ``undo`` (action restore) is the checkpoint that
    undoes the restore.
    """

    request_id: str
    workdir: str
    checkpoints: list[CheckpointView] = attrs.Factory(list)
    diff: str = ""
    truncated: bool = False
    target: CheckpointView | None = None
    undo: CheckpointView | None = None
