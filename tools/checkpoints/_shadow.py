"""One working directory's shadow repository: a bare git repository outside it that keeps its snapshots.

The working directory's own ``.git`` is never read nor written: git is pointed at the shadow repository
(``GIT_DIR``) and at the directory (``GIT_WORK_TREE``), with an index of the shadow's own. The snapshots
form one chain on :data:`REF`, newest at its tip.
"""

from __future__ import annotations

import functools
import os
import time
from pathlib import Path

import attrs
import trio

from tools.checkpoints._git import GitResult, run_git
from tools.checkpoints._scan import IGNORE_RULES, scan_tree
from tools.checkpoints.errors import CheckpointError, CheckpointNotFound

__all__ = ["REF", "Checkpoint", "CheckpointLimits", "ShadowRepository"]

REF = "refs/checkpoints/main"
_FIELD = "\x1f"
_RECORD = "\x1e"
_OUTPUT_CAP = 4 * 1024 * 1024
_IGNORED = "".join(f"{rule}\n" for rule in IGNORE_RULES)


@attrs.frozen
class CheckpointLimits:
    """The caps a snapshot obeys (``checkpoints.*``), and git's deadline.

    Attributes:
        max_snapshots: snapshots kept per working directory.
        max_total_bytes: the shadow repository's size cap (0: none).
        max_file_bytes: files over this are left out (0: none).
        max_files: a directory with more files is not snapshotted.
        timeout: seconds one git call may take (twice that to stage a tree).
    """

    max_snapshots: int = 20
    max_total_bytes: int = 500 * 1024 * 1024
    max_file_bytes: int = 10 * 1024 * 1024
    max_files: int = 50_000
    timeout: float = 30.0


@attrs.frozen
class Checkpoint:
    """One snapshot, as listed.

    Attributes:
        number: its place in the list, 1 the newest.
        commit: its commit in the shadow repository.
        taken_at: when (seconds since the epoch).
        reason: why it was taken (``before write_file`` ...).
        files_changed: files that differ from the snapshot before it.
    """

    number: int
    commit: str
    taken_at: float
    reason: str
    files_changed: int = 0

    @property
    def short(self) -> str:
        """The commit's first eight digits."""
        return self.commit[:8]


class ShadowRepository:
    """The snapshots of ``work_tree``, kept in ``git_dir``. Not safe for concurrent use: the caller
    holds one lock per working directory.

    Args:
        git_dir: where the shadow repository lives (created on the first snapshot).
        work_tree: the working directory, resolved.
        limits: the caps and the deadline.
    """

    def __init__(self, git_dir: Path, work_tree: Path, limits: CheckpointLimits) -> None:
        self.git_dir = git_dir
        self.work_tree = work_tree
        self.limits = limits

    async def _git(
        self, *args: str, index: Path | None = None, staging: bool = False, check: bool = True,
        extra_config: tuple[str, ...] = (), output_cap: int = _OUTPUT_CAP, extra_env: dict[str, str] | None = None,
    ) -> GitResult:
        """Git on this repository and its working directory; ``staging`` (a walk of the tree) gets twice the time."""
        return await run_git(
            list(args), git_dir=self.git_dir, work_tree=self.work_tree, index=index,
            timeout=self.limits.timeout * (2 if staging else 1), check=check, extra_config=extra_config,
            output_cap=output_cap, extra_env=extra_env,
        )

    @property
    def _index(self) -> Path:
        return self.git_dir / "index"

    async def _exists(self) -> bool:
        return await trio.Path(self.git_dir / "HEAD").exists()

    async def _tip(self) -> str | None:
        if not await self._exists():
            return None
        found = await self._git("rev-parse", "-q", "--verify", f"{REF}^{{commit}}", check=False)
        return found.text or None if found.status == 0 else None

    async def _ensure(self) -> None:
        if await self._exists():
            return
        await trio.Path(self.git_dir).mkdir(parents=True, exist_ok=True, mode=0o700)
        await run_git(["init", "--bare", "--quiet"], git_dir=self.git_dir, timeout=self.limits.timeout)
        await trio.to_thread.run_sync(functools.partial(_write_text, self.git_dir / "workdir", f"{self.work_tree}\n"))

    async def _stage(self, index: Path) -> None:
        """Put the working directory as it is now into ``index``, within the caps."""
        limits = self.limits
        scan = await trio.to_thread.run_sync(functools.partial(
            scan_tree, self.work_tree, max_files=limits.max_files, max_file_bytes=limits.max_file_bytes,
        ))
        left_out = self.git_dir / "left-out"
        # Both written each time: the ignore rules hold even where an earlier write was cut short.
        await trio.to_thread.run_sync(functools.partial(_write_text, left_out, "".join(f"{rule}\n" for rule in scan.left_out)))
        await trio.to_thread.run_sync(functools.partial(_write_text, self.git_dir / "info" / "exclude", _IGNORED))
        await self._git("add", "-A", "--", ".", index=index, staging=True,
                        extra_config=(f"core.excludesFile={left_out}",))

    async def snapshot(self, reason: str) -> Checkpoint | None:
        """Take a snapshot of the working directory; None when nothing changed since the last.

        Raises:
            CheckpointSkipped: too many files.
            CheckpointError: git failed.
        """
        await self._ensure()
        tip = await self._tip()
        index = self._index
        if tip is not None:
            await self._git("read-tree", tip, index=index)
        else:
            await trio.to_thread.run_sync(functools.partial(index.unlink, missing_ok=True))
        await self._stage(index)
        if tip is not None:
            same = await self._git("diff-index", "--cached", "--quiet", tip, "--", index=index, check=False)
            if same.status == 0:
                return None
        tree = (await self._git("write-tree", index=index)).text
        parent = ("-p", tip) if tip is not None else ()
        commit = (await self._git("commit-tree", tree, *parent, "-m", reason)).text
        await self._git("update-ref", REF, commit, *((tip,) if tip is not None else ()))
        await self._keep(self.limits.max_snapshots)
        await self._cap_size()
        return Checkpoint(1, commit, time.time(), reason)

    async def checkpoints(self) -> list[Checkpoint]:
        """The snapshots, newest first."""
        if await self._tip() is None:
            return []
        listed = await self._git(
            "log", REF, f"--format={_RECORD}%H{_FIELD}%ct{_FIELD}%s", "--shortstat", "--no-renames",
            f"--max-count={self.limits.max_snapshots}",
        )
        found = []
        for number, record in enumerate(listed.text.split(_RECORD)[1:], start=1):
            head, _, stat = record.partition("\n")
            commit, taken, reason = head.split(_FIELD, 2)
            changed = stat.strip().split(" ", 1)[0]
            found.append(Checkpoint(number, commit, float(taken), reason, int(changed) if changed.isdigit() else 0))
        return found

    async def find(self, number: int) -> Checkpoint:
        """Snapshot ``number`` (1 the newest).

        Raises:
            CheckpointNotFound: there is no such snapshot.
        """
        listed = await self.checkpoints()
        if not listed:
            raise CheckpointNotFound(f"no checkpoints of {self.work_tree} yet")
        if not 1 <= number <= len(listed):
            raise CheckpointNotFound(f"no checkpoint {number}: {self.work_tree} has {len(listed)} (1 is the newest)")
        return listed[number - 1]

    async def diff(self, checkpoint: Checkpoint, output_cap: int) -> tuple[str, bool]:
        """What changed in the working directory since ``checkpoint``: a stat and a patch, and whether
        it was cut at ``output_cap`` bytes."""
        index = self.git_dir / "diff-index"
        try:
            await self._git("read-tree", checkpoint.commit, index=index)
            await self._stage(index)
            shown = await self._git(
                "diff", "--cached", "--no-ext-diff", "--no-textconv", "--no-color", "--no-renames",
                "--stat", "--patch", checkpoint.commit, "--", index=index, output_cap=output_cap,
            )
        finally:
            await trio.to_thread.run_sync(functools.partial(index.unlink, missing_ok=True))
        return shown.text, shown.truncated

    async def restore(self, checkpoint: Checkpoint) -> None:
        """Make the working directory what ``checkpoint`` holds: its files written back, those created
        since (and snapshotted by the caller just before) removed. Files the snapshots leave out (ignored,
        oversize) are not touched. Git writes no file through a symbolic link: a link where a directory
        was is replaced by the directory.

        Raises:
            CheckpointError: git failed.
        """
        index = self._index
        # The index holds the tree just snapshotted: what --no-overlay removes is what is not in the checkpoint.
        await self._git("read-tree", await self._require_tip(), index=index)
        await self._git("checkout", "--no-overlay", checkpoint.commit, "--", ".", index=index, staging=True)
        await self._git("read-tree", await self._require_tip(), index=index)

    async def _require_tip(self) -> str:
        tip = await self._tip()
        if tip is None:
            raise CheckpointError(f"the shadow repository of {self.work_tree} has no snapshot")
        return tip

    async def _keep(self, count: int) -> None:
        """Drop all but the newest ``count`` snapshots (rewriting the chain), then the objects only they held."""
        listed = (await self._git("rev-list", "--reverse", REF)).text.split()
        if len(listed) <= count:
            return
        parent: str | None = None
        for commit in listed[-count:]:
            fields = (await self._git("log", "-1", f"--format=%T{_FIELD}%ct{_FIELD}%B", commit)).text
            tree, taken, message = fields.split(_FIELD, 2)
            dated = f"@{taken} +0000"
            rewritten = await self._git(
                "commit-tree", tree, *(("-p", parent) if parent else ()), "-m", message.strip() or "checkpoint",
                extra_env={"GIT_AUTHOR_DATE": dated, "GIT_COMMITTER_DATE": dated},
            )
            parent = rewritten.text
        assert parent is not None
        await self._git("update-ref", REF, parent)
        await self._git("gc", "--prune=now", "--quiet", staging=True)

    async def _cap_size(self) -> None:
        """Drop the oldest snapshots while the shadow repository is over its size cap (one is always kept)."""
        cap = self.limits.max_total_bytes
        if not cap:
            return
        while await trio.to_thread.run_sync(_tree_bytes, self.git_dir) > cap:
            count = int((await self._git("rev-list", "--count", REF)).text or 0)
            if count <= 1:
                return
            await self._keep(count - 1)


def _write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _tree_bytes(root: Path) -> int:
    total = 0
    for directory, _, filenames in os.walk(root):
        for name in filenames:
            try:
                total += os.lstat(os.path.join(directory, name)).st_size
            except OSError:
                continue
    return total
