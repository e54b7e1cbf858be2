"""Checkpoints of a working directory with real git: snapshots within the caps, rollback, and a hostile
directory (its own .git, hooks, a filter, links out of it) that cannot make git run code or write outside."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from tools.checkpoints import CheckpointLimits, CheckpointNotFound, Checkpoints, CheckpointSkipped

LIMITS = CheckpointLimits(max_file_bytes=1000)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    (path / "a.txt").write_text("original\n")
    return path


@pytest.fixture
def checkpoints(tmp_path: Path) -> Checkpoints:
    return Checkpoints(tmp_path / "home" / "checkpoints")


class TestSnapshots:
    """A snapshot keeps the directory's files in a shadow repository and changes nothing in the directory."""

    async def test_unchanged_directory_takes_no_second_snapshot(self, work: Path, checkpoints: Checkpoints) -> None:
        """The first snapshot is taken, an identical one is not, a changed tree is."""
        assert await checkpoints.snapshot(str(work), "first", LIMITS) is not None
        assert await checkpoints.snapshot(str(work), "again", LIMITS) is None
        (work / "a.txt").write_text("changed\n")
        assert await checkpoints.snapshot(str(work), "second", LIMITS) is not None
        assert ["second", "first"] == [found.reason for found in await checkpoints.list(str(work), LIMITS)]
        # Nothing of git's lands in the directory itself.
        assert ["a.txt"] == sorted(os.listdir(work))

    async def test_caps_and_ignore_rules(self, work: Path, checkpoints: Checkpoints) -> None:
        """A file over max_file_bytes, .env and node_modules are left out, and a restore leaves them alone."""
        (work / "big.bin").write_bytes(b"x" * 5000)
        (work / ".env").write_text("KEY=secret\n")
        (work / "node_modules").mkdir()
        (work / "node_modules" / "dep.js").write_text("x")
        await checkpoints.snapshot(str(work), "first", LIMITS)
        (work / "a.txt").write_text("changed\n")
        diff = await checkpoints.diff(str(work), 1, LIMITS, 100_000)
        assert "a.txt" in diff.text
        assert "big.bin" not in diff.text and ".env" not in diff.text and "dep.js" not in diff.text
        await checkpoints.restore(str(work), 1, LIMITS)
        assert (work / "big.bin").stat().st_size == 5000 and (work / ".env").exists()
        assert (work / "node_modules" / "dep.js").exists()

    async def test_too_many_files_is_skipped(self, work: Path, checkpoints: Checkpoints) -> None:
        """A directory over max_files is not snapshotted at all."""
        for n in range(5):
            (work / f"f{n}").write_text("x")
        with pytest.raises(CheckpointSkipped, match="more than 3 files"):
            await checkpoints.snapshot(str(work), "first", CheckpointLimits(max_files=3))

    async def test_broad_directories_are_refused(self, tmp_path: Path) -> None:
        """The root, a directory named too broad, and one holding the checkpoints are never snapshotted."""
        (tmp_path / "home").mkdir()
        checkpoints = Checkpoints(tmp_path / "home" / "checkpoints", frozenset({tmp_path / "home"}))
        for broad in ("/", str(tmp_path / "home"), str(tmp_path)):
            with pytest.raises(CheckpointSkipped, match="too broad"):
                await checkpoints.snapshot(broad, "x", LIMITS)

    async def test_oldest_are_dropped_past_max_snapshots(self, work: Path, checkpoints: Checkpoints) -> None:
        """Only the newest max_snapshots are kept, in order."""
        limits = CheckpointLimits(max_snapshots=2)
        for n in range(4):
            (work / "a.txt").write_text(f"{n}\n")
            await checkpoints.snapshot(str(work), f"s{n}", limits)
        assert ["s3", "s2"] == [found.reason for found in await checkpoints.list(str(work), limits)]


class TestRestore:
    """A restore sets the directory back, removes files created since, and can itself be undone."""

    async def test_restore_and_undo(self, work: Path, checkpoints: Checkpoints) -> None:
        """Restoring checkpoint 1 brings back the old text and drops the new file; restoring the undo reverses it."""
        await checkpoints.snapshot(str(work), "before edit", LIMITS)
        (work / "a.txt").write_text("edited\n")
        (work / "new.txt").write_text("new\n")
        restored = await checkpoints.restore(str(work), 1, LIMITS)
        assert "original\n" == (work / "a.txt").read_text() and not (work / "new.txt").exists()
        assert (1, "before edit") == (restored.checkpoint.number, restored.checkpoint.reason)
        assert 1 == restored.undo.number and "before restoring checkpoint 1" in restored.undo.reason
        await checkpoints.restore(str(work), 1, LIMITS)
        assert "edited\n" == (work / "a.txt").read_text() and "new\n" == (work / "new.txt").read_text()

    async def test_unknown_number(self, work: Path, checkpoints: Checkpoints) -> None:
        """A number past the list is refused, and nothing is written."""
        with pytest.raises(CheckpointNotFound, match="no checkpoints"):
            await checkpoints.restore(str(work), 1, LIMITS)
        await checkpoints.snapshot(str(work), "first", LIMITS)
        with pytest.raises(CheckpointNotFound, match="has 1"):
            await checkpoints.restore(str(work), 2, LIMITS)


class TestSymlinks:
    """Links in the working directory are kept as links: nothing is read or written through them."""

    async def test_restore_does_not_write_through_a_link_out(self, tmp_path: Path, work: Path, checkpoints: Checkpoints) -> None:
        """A directory replaced by a link out of the working directory is restored as a directory; the
        link's target is untouched; a link created since is removed, not its target."""
        outside = tmp_path / "outside"
        outside.mkdir()
        (outside / "secret.txt").write_text("keep\n")
        (work / "sub").mkdir()
        (work / "sub" / "secret.txt").write_text("from the checkpoint\n")
        await checkpoints.snapshot(str(work), "first", LIMITS)
        subprocess.run(["rm", "-r", str(work / "sub")], check=True)
        (work / "sub").symlink_to(outside)
        (work / "link").symlink_to(outside / "secret.txt")
        await checkpoints.restore(str(work), 1, LIMITS)
        assert "keep\n" == (outside / "secret.txt").read_text()
        assert not (work / "sub").is_symlink() and "from the checkpoint\n" == (work / "sub" / "secret.txt").read_text()
        assert not os.path.lexists(work / "link") and (outside / "secret.txt").exists()

    async def test_snapshot_does_not_read_through_a_link(self, tmp_path: Path, work: Path, checkpoints: Checkpoints) -> None:
        """A link to a directory outside is snapshotted as a link, not as the files it points to."""
        outside = tmp_path / "outside"
        outside.mkdir()
        (outside / "private.txt").write_text("private\n")
        (work / "out").symlink_to(outside)
        await checkpoints.snapshot(str(work), "first", LIMITS)
        (work / "a.txt").write_text("x\n")
        diff = await checkpoints.diff(str(work), 1, LIMITS, 100_000)
        assert "private" not in diff.text


class TestHostileDirectory:
    """A working directory's own .git, hooks, attributes and filters are never used."""

    async def test_no_code_runs(self, tmp_path: Path, work: Path, checkpoints: Checkpoints) -> None:
        """Hooks, a filter, an fsmonitor and a diff driver named by the directory run nothing; its .git is untouched."""
        marker = tmp_path / "pwned"
        evil = f"touch {marker}"
        subprocess.run(["git", "init", "-q", str(work)], check=True, env={"PATH": os.environ["PATH"]})
        git_config = work / ".git" / "config"
        git_config.write_text(git_config.read_text() + (
            f'[core]\n\tfsmonitor = "{evil}"\n\thooksPath = hooks\n[filter "evil"]\n\tclean = "{evil}"\n'
            f'\tsmudge = "{evil}"\n[diff "evil"]\n\tcommand = "{evil}"\n\ttextconv = "{evil}"\n'
        ))
        (work / "hooks").mkdir()
        for hook in ("pre-commit", "post-checkout", "post-index-change", "reference-transaction"):
            (work / "hooks" / hook).write_text(f"#!/bin/sh\n{evil}\n")
            (work / "hooks" / hook).chmod(0o755)
        (work / ".gitattributes").write_text("* filter=evil diff=evil\n")
        nested = work / "vendor"
        subprocess.run(["git", "init", "-q", str(nested)], check=True, env={"PATH": os.environ["PATH"]})
        (nested / ".git" / "config").write_text(f'[core]\n\tfsmonitor = "{evil}"\n')
        before = sorted(os.listdir(work / ".git"))
        await checkpoints.snapshot(str(work), "first", LIMITS)
        (work / "a.txt").write_text("changed\n")
        await checkpoints.diff(str(work), 1, LIMITS, 100_000)
        await checkpoints.restore(str(work), 1, LIMITS)
        assert not marker.exists()
        assert "original\n" == (work / "a.txt").read_text()
        assert before == sorted(os.listdir(work / ".git"))

    async def test_git_is_bounded_in_time(self, work: Path, checkpoints: Checkpoints) -> None:
        """A git call past the deadline fails the snapshot with a clear error, and leaves no process behind."""
        from tools.checkpoints import CheckpointError

        with pytest.raises(CheckpointError, match="took longer than"):
            await checkpoints.snapshot(str(work), "first", CheckpointLimits(timeout=0.0))
        await trio.sleep(0)


NOBODY = 65534
_AS_NOBODY = """
import json, sys, trio
sys.path.insert(0, {root!r})
from pathlib import Path
from tools.checkpoints import CheckpointLimits, Checkpoints

async def main():
    base = Path({base!r})
    checkpoints = Checkpoints(base / "home" / "checkpoints")
    found = {{}}
    own = base / "own"
    await checkpoints.snapshot(str(own), "first", CheckpointLimits())
    (own / "a.txt").write_text("edited")
    found["restored"] = (await checkpoints.restore(str(own), 1, CheckpointLimits())).checkpoint.reason
    found["text"] = (own / "a.txt").read_text()
    taken = await checkpoints.snapshot(str(base / "roots"), "theirs", CheckpointLimits())
    found["roots"] = taken is not None
    print(json.dumps(found))

trio.run(main)
"""


@pytest.fixture
def outside_pytest_tmp() -> Iterator[Path]:
    """A directory an ordinary user can reach (pytest's own are root's alone)."""
    path = Path(tempfile.mkdtemp(prefix="hx-nobody-", dir="/tmp"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


class TestAsOrdinaryUser:
    """A daemon run by an ordinary user snapshots and restores its user's directories, and snapshots a
    readable directory another user owns (git's ownership check does not refuse the shadow repository)."""

    def test_unprivileged(self, outside_pytest_tmp: Path) -> None:
        """As uid 65534: snapshot, restore, and a root-owned readable directory snapshotted."""
        setpriv = shutil.which("setpriv")
        if os.geteuid() != 0 or setpriv is None:
            pytest.skip("needs root and setpriv to become an ordinary user")
        base = outside_pytest_tmp / "nobody"
        for path in (base / "home", base / "own"):
            path.mkdir(parents=True)
        (base / "own" / "a.txt").write_text("original")
        (base / "roots").mkdir()
        (base / "roots" / "r.txt").write_text("root's")
        for path in (base, base / "home", base / "own", base / "own" / "a.txt"):
            os.chown(path, NOBODY, NOBODY)
        script = base / "probe.py"
        script.write_text(_AS_NOBODY.format(root=str(Path(__file__).parents[2]), base=str(base)))
        done = subprocess.run(
            [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", sys.executable, str(script)],
            capture_output=True, text=True, timeout=60, env={"PATH": os.environ["PATH"], "HOME": str(base)},
        )  # fmt: skip
        assert 0 == done.returncode, done.stderr
        assert {"restored": "first", "text": "original", "roots": True} == json.loads(done.stdout)
