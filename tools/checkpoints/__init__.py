"""Filesystem checkpoints: snapshots of a session's working directory, taken before the agent changes it,
and the rollback to any of them (``checkpoints.*``, Hermes Agent's ``/rollback``).

Each working directory has a shadow git repository under the daemon's home (``_shadow``), never its own
``.git``; git runs as a child process with nothing of the user's or the directory's configuration
(``_git``); a walk before each snapshot enforces the caps (``_scan``). The model is told nothing: a
checkpoint is not a tool.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

import attrs
import trio

from tools.checkpoints._shadow import Checkpoint, CheckpointLimits, ShadowRepository
from tools.checkpoints.errors import CheckpointError, CheckpointNotFound, CheckpointSkipped

__all__ = [
    "Checkpoint",
    "CheckpointDiff",
    "CheckpointError",
    "CheckpointLimits",
    "CheckpointNotFound",
    "CheckpointSkipped",
    "Checkpoints",
    "Restored",
]


@attrs.frozen
class CheckpointDiff:
    """What changed since a checkpoint.

    Attributes:
        checkpoint: the checkpoint compared with.
        text: a stat, then the patch.
        truncated: ``text`` was cut at the cap asked for.
    """

    checkpoint: Checkpoint
    text: str
    truncated: bool


@attrs.frozen
class Restored:
    """A restore done.

    Attributes:
        checkpoint: the checkpoint the working directory was set back to (as numbered before the restore).
        undo: the snapshot of the directory as it was just before (number 1 now): restoring it undoes this.
    """

    checkpoint: Checkpoint
    undo: Checkpoint


class Checkpoints:
    """The daemon's checkpoints: one shadow repository per working directory under ``root``, and one lock
    per directory, so a session's snapshot and a user's restore never run git on it at once.

    Args:
        root: where the shadow repositories live (``HERMES_ACTORS_HOME/checkpoints``).
        too_broad: directories never snapshotted (``/``, the user's home); nor is one that holds ``root``.
    """

    def __init__(self, root: Path, too_broad: frozenset[Path] = frozenset()) -> None:
        self.root = root
        self._too_broad = too_broad | {Path("/")}
        self._locks: dict[Path, trio.Lock] = {}

    def _resolve(self, workdir: str) -> Path:
        """The working directory as a real path (blocking: a few system calls).

        Raises:
            CheckpointSkipped: it is not a directory, is too broad, or holds the checkpoints themselves.
        """
        path = Path(workdir).resolve()
        if not path.is_dir():
            raise CheckpointSkipped(f"{workdir} is not a directory")
        root = self.root.resolve()
        if path in {broad.resolve() for broad in self._too_broad} or root == path or path in root.parents:
            raise CheckpointSkipped(f"{path} is too broad to snapshot")
        return path

    async def _open(self, workdir: str, limits: CheckpointLimits) -> tuple[ShadowRepository, trio.Lock]:
        path = await trio.to_thread.run_sync(functools.partial(self._resolve, workdir))
        name = hashlib.sha256(str(path).encode()).hexdigest()[:16]
        lock = self._locks.setdefault(path, trio.Lock())
        return ShadowRepository(self.root / name, path, limits), lock

    async def snapshot(self, workdir: str, reason: str, limits: CheckpointLimits) -> Checkpoint | None:
        """Snapshot ``workdir``; None when nothing changed since its last.

        Raises:
            CheckpointSkipped: the directory is not snapshotted (too broad, too many files, gone).
            CheckpointError: git failed.
        """
        repository, lock = await self._open(workdir, limits)
        async with lock:
            return await repository.snapshot(reason)

    async def list(self, workdir: str, limits: CheckpointLimits) -> list[Checkpoint]:
        """The checkpoints of ``workdir``, newest first.

        Raises:
            CheckpointError: as :meth:`snapshot`.
        """
        repository, lock = await self._open(workdir, limits)
        async with lock:
            return await repository.checkpoints()

    async def diff(self, workdir: str, number: int, limits: CheckpointLimits, output_cap: int) -> CheckpointDiff:
        """What changed in ``workdir`` since checkpoint ``number``, cut at ``output_cap`` bytes.

        Raises:
            CheckpointNotFound: no such checkpoint.
            CheckpointError: as :meth:`snapshot`.
        """
        repository, lock = await self._open(workdir, limits)
        async with lock:
            checkpoint = await repository.find(number)
            text, truncated = await repository.diff(checkpoint, output_cap)
        return CheckpointDiff(checkpoint, text, truncated)

    async def restore(self, workdir: str, number: int, limits: CheckpointLimits) -> Restored:
        """Set ``workdir`` back to checkpoint ``number``, snapshotting it first so the restore can be undone.

        Raises:
            CheckpointNotFound: no such checkpoint.
            CheckpointSkipped: the snapshot before the restore cannot be taken (nothing is changed then).
            CheckpointError: as :meth:`snapshot`.
        """
        repository, lock = await self._open(workdir, limits)
        async with lock:
            checkpoint = await repository.find(number)
            await repository.snapshot(f"before restoring checkpoint {number} ({checkpoint.short})")
            undo = await repository.find(1)
            await repository.restore(checkpoint)
        return Restored(checkpoint, undo)
