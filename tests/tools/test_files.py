"""read_file, write_file and patch on real files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import trio

from tests.tools.helpers import model_view
from tools.files import (
    MAX_LIMIT,
    atomic_write,
    patch_handler,
    read_file_handler,
    write_file_handler,
)
from tools.testing import LocalToolContext


@pytest.fixture
def ctx(tmp_path: Path) -> LocalToolContext:
    return LocalToolContext(home=tmp_path / "home", cwd=tmp_path)


async def call(handler, ctx: LocalToolContext, **args: object) -> dict:  # type: ignore[no-untyped-def]  # takes any of the file tools' handlers, each typed differently
    return await model_view(handler, args, ctx)


class TestReadFile:
    """Numbered windows, totals and helpful errors."""

    async def test_window_with_totals(self, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "f.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
        result = await call(read_file_handler, ctx, path="f.txt", offset=3, limit=2)
        assert "3|line 3\n4|line 4" == result["content"]
        assert (3, 2, 10, 5) == (result["offset"], result["lines_returned"], result["total_lines"], result["next_offset"])

    async def test_last_window_has_no_next_offset(self, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "f.txt").write_text("a\nb\n")
        result = await call(read_file_handler, ctx, path="f.txt")
        assert "1|a\n2|b" == result["content"]
        assert "next_offset" not in result

    async def test_relative_to_session_cwd(self, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "sub").mkdir()
        (tmp_path / "sub" / "g.txt").write_text("hello\n")
        ctx.shell.cwd = str(tmp_path / "sub")
        assert "1|hello" == (await call(read_file_handler, ctx, path="g.txt"))["content"]

    async def test_limit_clamped(self, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "big.txt").write_text("x\n" * 3000)
        result = await call(read_file_handler, ctx, path="big.txt", limit=5000)
        assert MAX_LIMIT == result["lines_returned"]

    async def test_long_line_truncated(self, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "wide.txt").write_text("y" * 5000 + "\n")
        content = (await call(read_file_handler, ctx, path="wide.txt"))["content"]
        assert content.endswith("[line truncated: 5,000 chars]")

    async def test_missing_file_suggests_names(self, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "config.yaml").write_text("a: 1\n")
        result = await call(read_file_handler, ctx, path="config.yml")
        assert result["error"].startswith(f"File not found: {tmp_path / 'config.yml'}.")
        assert "config.yaml" in result["error"]

    async def test_binary_refused(self, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "blob.bin").write_bytes(b"\x89PNG\x00\x01\x02" * 10)
        result = await call(read_file_handler, ctx, path="blob.bin")
        assert "looks like a binary file (70 bytes)" in result["error"]

    async def test_directory_refused(self, ctx: LocalToolContext, tmp_path: Path) -> None:
        result = await call(read_file_handler, ctx, path=".")
        assert "is a directory" in result["error"] and "search_files" in result["error"]

    async def test_offset_past_end(self, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "f.txt").write_text("a\nb\n")
        result = await call(read_file_handler, ctx, path="f.txt", offset=9)
        assert "offset 9 is past the end" in result["error"] and "(2 lines)" in result["error"]

    async def test_oversize_refused(self, ctx: LocalToolContext, tmp_path: Path) -> None:
        big = tmp_path / "huge.log"
        with big.open("wb") as handle:
            handle.truncate(101 * 1024 * 1024)  # sparse: no real disk use
        result = await call(read_file_handler, ctx, path="huge.log")
        assert "too large for read_file" in result["error"]


class TestWriteFile:
    """Atomic writes that create parents and keep modes."""

    async def test_creates_parents(self, ctx: LocalToolContext, tmp_path: Path) -> None:
        result = await call(write_file_handler, ctx, path="a/b/c.txt", content="héllo\n")
        shown = str(tmp_path / "a/b/c.txt")
        expected = {"bytes_written": 7, "dirs_created": True, "created": True, "resolved_path": shown, "files_modified": [shown]}
        assert expected == result
        assert "héllo\n" == (tmp_path / "a/b/c.txt").read_text()

    async def test_overwrite_keeps_mode_and_leaves_no_temp(self, ctx: LocalToolContext, tmp_path: Path) -> None:
        target = tmp_path / "run.sh"
        target.write_text("old")
        target.chmod(0o750)
        result = await call(write_file_handler, ctx, path="run.sh", content="new")
        assert result["created"] is False
        assert "new" == target.read_text()
        assert 0o750 == target.stat().st_mode & 0o777
        assert ["run.sh"] == os.listdir(tmp_path)

    async def test_directory_target(self, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "d").mkdir()
        assert "is a directory" in (await call(write_file_handler, ctx, path="d", content="x"))["error"]

    async def test_an_empty_path_is_a_missing_path(self, ctx: LocalToolContext, tmp_path: Path) -> None:
        """As Hermes: ``path=''`` is the missing field it is, not the working directory."""
        result = await call(write_file_handler, ctx, path="", content="x")
        assert result["error"] == "write_file: missing required field 'path'. Re-emit the tool call with both 'path' and 'content' set."
        assert os.listdir(tmp_path) == []

    def test_failed_write_leaves_no_temp_file(self, tmp_path: Path) -> None:
        """When the final rename fails the temp file is removed and the error surfaces."""
        (tmp_path / "target").mkdir()
        (tmp_path / "target" / "keep").write_text("x")
        with pytest.raises(OSError):
            atomic_write(tmp_path / "target", b"data")
        assert ["target"] == os.listdir(tmp_path)

    async def test_readers_never_see_partial_content(self, tmp_path: Path) -> None:
        """Concurrent readers see the old or the new content, nothing in between."""
        target = tmp_path / "f.txt"
        old, new = b"A" * 200_000, b"B" * 200_000
        target.write_bytes(old)
        bad: list[int] = []

        def reader() -> None:
            for _ in range(300):
                data = target.read_bytes()
                if data not in (old, new):
                    bad.append(len(data))

        def writer() -> None:
            for i in range(50):
                atomic_write(target, new if i % 2 else old)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.to_thread.run_sync, reader)
            nursery.start_soon(trio.to_thread.run_sync, writer)
        assert [] == bad


class TestPatch:
    """Exact replacement with a diff; every error names what to do."""

    async def test_unique_replacement_returns_diff(self, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "m.py").write_text("def f():\n    return 1\n")
        result = await call(patch_handler, ctx, path="m.py", old_string="return 1", new_string="return 2")
        assert "def f():\n    return 2\n" == (tmp_path / "m.py").read_text()
        assert 1 == result["replacements"]
        assert "-    return 1\n+    return 2\n" in result["diff"]
        assert result["diff"].startswith("--- a/m.py\n+++ b/m.py\n")

    async def test_not_unique_lists_lines(self, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "m.py").write_text("x = 1\ny = 2\nx = 1\n")
        result = await call(patch_handler, ctx, path="m.py", old_string="x = 1", new_string="x = 3")
        assert "matches 2 places" in result["error"] and "line 1: x = 1\n  line 3: x = 1" in result["error"]
        assert "replace_all=true" in result["error"]
        assert "x = 1\ny = 2\nx = 1\n" == (tmp_path / "m.py").read_text()

    async def test_replace_all(self, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "m.py").write_text("x = 1\ny = 2\nx = 1\n")
        result = await call(patch_handler, ctx, path="m.py", old_string="x = 1", new_string="x = 3", replace_all=True)
        assert 2 == result["replacements"]
        assert "x = 3\ny = 2\nx = 3\n" == (tmp_path / "m.py").read_text()

    async def test_missing_with_candidate(self, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "m.py").write_text("a = 1\nresult = compute(alpha, beta)\nb = 2\n")
        result = await call(patch_handler, ctx, path="m.py", old_string="result = compute(alpha, beta)\nc = 3", new_string="x")
        assert "old_string was not found" in result["error"]
        assert "Similar text at line(s) 2" in result["error"]

    async def test_missing_without_candidates(self, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "m.py").write_text("a = 1\n")
        result = await call(patch_handler, ctx, path="m.py", old_string="zzz qqq", new_string="x")
        assert result["error"].endswith("Read the file with read_file and copy the text exactly.")

    @pytest.mark.parametrize(
        ("old", "new", "message"),
        [("", "x", "old_string is empty"), ("a", "a", "identical")],
    )
    async def test_bad_strings(self, ctx: LocalToolContext, tmp_path: Path, old: str, new: str, message: str) -> None:
        (tmp_path / "m.py").write_text("a\n")
        assert message in (await call(patch_handler, ctx, path="m.py", old_string=old, new_string=new))["error"]

    async def test_missing_file(self, ctx: LocalToolContext) -> None:
        result = await call(patch_handler, ctx, path="nope.py", old_string="a", new_string="b")
        assert "File not found" in result["error"] and "write_file" in result["error"]

    async def test_binary_file(self, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "b.bin").write_bytes(b"a\x00b")
        result = await call(patch_handler, ctx, path="b.bin", old_string="a", new_string="b")
        assert "binary" in result["error"]

    async def test_invalid_utf8(self, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "l1.txt").write_bytes(b"caf\xe9\n")
        result = await call(patch_handler, ctx, path="l1.txt", old_string="caf", new_string="x")
        assert "not valid UTF-8" in result["error"]

    async def test_directory(self, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "d").mkdir()
        result = await call(patch_handler, ctx, path="d", old_string="a", new_string="b")
        assert "is a directory" in result["error"]
