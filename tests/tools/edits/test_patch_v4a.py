"""patch with mode='patch' applies V4A multi-file patches, all or nothing, through the real registry and dispatch."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.tools.edits.helpers import call
from tools.redact import REDACTED
from tools.registry import ToolRegistry
from tools.testing import LocalToolContext

KEY = "sk-proj-0123456789abcdefghijKLMNOP"


async def apply(registry: ToolRegistry, ctx: LocalToolContext, text: str) -> dict[str, Any]:
    return await call(registry, ctx, "patch", mode="patch", patch=text)


def v4a(*body: str) -> str:
    return "\n".join(("*** Begin Patch", *body, "*** End Patch"))


class TestOperations:
    """Update, add, delete and move, each reported in Hermes's buckets with a diff."""

    async def test_update_with_context(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "app.py").write_text("def run():\n    x = 1\n    return x\n")
        result = await apply(registry, ctx, v4a(
            "*** Update File: app.py", "@@ def run @@", " def run():", "-    x = 1", "+    x = 2", "     return x",
        ))  # fmt: skip
        assert "def run():\n    x = 2\n    return x\n" == (tmp_path / "app.py").read_text()
        assert result["success"] is True and [str(tmp_path / "app.py")] == result["files_modified"]
        assert str(tmp_path / "app.py") == result["resolved_path"], "one file: Hermes names it in resolved_path"
        assert "--- a/app.py\n+++ b/app.py\n" in result["diff"] and "-    x = 1\n+    x = 2\n" in result["diff"]
        assert {"status": "ok"} == result["lint"][str(tmp_path / "app.py")]

    async def test_add_delete_move_together(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "old.txt").write_text("bye\n")
        (tmp_path / "a.sh").write_text("echo a\n")
        (tmp_path / "a.sh").chmod(0o755)
        result = await apply(registry, ctx, v4a(
            "*** Add File: docs/new.md", "+# Title", "+", "+text",
            "*** Delete File: old.txt",
            "*** Move File: a.sh -> bin/b.sh",
        ))  # fmt: skip
        assert "# Title\n\ntext\n" == (tmp_path / "docs/new.md").read_text()
        assert not (tmp_path / "old.txt").exists() and not (tmp_path / "a.sh").exists()
        assert "echo a\n" == (tmp_path / "bin/b.sh").read_text()
        assert 0o755 == (tmp_path / "bin/b.sh").stat().st_mode & 0o777, "a moved file keeps its mode"
        assert [str(tmp_path / "docs/new.md")] == result["files_created"]
        assert [str(tmp_path / "old.txt")] == result["files_deleted"]
        every = ["a.sh", "bin/b.sh", "docs/new.md", "old.txt"]
        assert [str(tmp_path / name) for name in every] == sorted(result["files_modified"]), "as Hermes: every file"
        assert "resolved_path" not in result
        assert "--- a/old.txt\n+++ /dev/null\n" in result["diff"] and "--- /dev/null\n+++ b/docs/new.md\n" in result["diff"]

    async def test_update_then_move_to(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "src.py").write_text("A = 1\n")
        result = await apply(registry, ctx, v4a("*** Update File: src.py", "*** Move to: pkg/dst.py", "-A = 1", "+A = 2"))
        assert "A = 2\n" == (tmp_path / "pkg/dst.py").read_text() and not (tmp_path / "src.py").exists()
        assert [str(tmp_path / "pkg/dst.py"), str(tmp_path / "src.py")] == sorted(result["files_modified"])

    async def test_hunks_see_earlier_hunks(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "f.txt").write_text("one\ntwo\nthree\n")
        await apply(registry, ctx, v4a(
            "*** Update File: f.txt", "@@", "-one", "+ONE", "@@", " ONE", "-two", "+TWO",
            "*** Update File: f.txt", "-three", "+THREE",
        ))  # fmt: skip
        assert "ONE\nTWO\nTHREE\n" == (tmp_path / "f.txt").read_text()

    async def test_hint_picks_among_identical_blocks(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "f.py").write_text("def a():\n    pass\n\ndef b():\n    pass\n")
        await apply(registry, ctx, v4a("*** Update File: f.py", "@@ def b(): @@", "-    pass", "+    return 2"))
        assert "def a():\n    pass\n\ndef b():\n    return 2\n" == (tmp_path / "f.py").read_text()

    async def test_addition_only_hunk_goes_after_its_hint(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "f.py").write_text("import os\n\nx = 1\n")
        await apply(registry, ctx, v4a("*** Update File: f.py", "@@ import os @@", "+import sys"))
        assert "import os\nimport sys\n\nx = 1\n" == (tmp_path / "f.py").read_text()

    async def test_fuzzy_context(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        """A hunk whose context has lost its indentation still applies, through the same chain as replace mode."""
        (tmp_path / "f.py").write_text("if a:\n    b = 1\n    c = 2\n")
        await apply(registry, ctx, v4a("*** Update File: f.py", " if a:", "-b = 1", "+b = 3", " c = 2"))
        assert "if a:\n    b = 3\n    c = 2\n" == (tmp_path / "f.py").read_text()


class TestAllOrNothing:
    """A failing part leaves every file as it was; the error names the file and the hunk."""

    async def test_failing_hunk_changes_nothing(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "a.txt").write_text("alpha\n")
        (tmp_path / "b.txt").write_text("beta\n")
        result = await apply(registry, ctx, v4a(
            "*** Update File: a.txt", "-alpha", "+ALPHA",
            "*** Add File: c.txt", "+new",
            "*** Update File: b.txt", "@@ gamma section @@", "-gamma", "+GAMMA",
        ))  # fmt: skip
        assert "The patch was not applied (no file was changed)" in result["error"]
        assert "b.txt: hunk 1 (@@ gamma section) failed: old_string was not found" in result["error"]
        assert "alpha\n" == (tmp_path / "a.txt").read_text() and not (tmp_path / "c.txt").exists()

    @pytest.mark.parametrize(
        ("body", "message"),
        [
            (("*** Add File: a.txt", "+x"), "a.txt: the file already exists; use '*** Update File:'"),
            (("*** Delete File: nope.txt",), "nope.txt: there is no such file to delete"),
            (("*** Update File: nope.txt", "-a", "+b"), "nope.txt: there is no such file to update"),
            (("*** Move File: a.txt -> b.txt",), "the destination"),
        ],
    )
    async def test_operation_checks(
        self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path, body: tuple[str, ...], message: str
    ) -> None:
        (tmp_path / "a.txt").write_text("a\n")
        (tmp_path / "b.txt").write_text("b\n")
        result = await apply(registry, ctx, v4a(*body))
        assert message in result["error"]
        assert ("a\n", "b\n") == ((tmp_path / "a.txt").read_text(), (tmp_path / "b.txt").read_text())

    async def test_policy_refusal_changes_nothing(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        """A path the sandbox policy refuses (the agent's home) fails the whole patch."""
        (tmp_path / "a.txt").write_text("a\n")
        result = await apply(registry, ctx, v4a(
            "*** Update File: a.txt", "-a", "+b", f"*** Add File: {tmp_path / 'home' / 'SOUL.md'}", "+evil",
        ))  # fmt: skip
        assert "hidden from tools" in result["error"] and "a\n" == (tmp_path / "a.txt").read_text()
        assert not (tmp_path / "home" / "SOUL.md").exists()

    async def test_marker_over_secret_refused(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / ".env").write_text(f"OPENAI_API_KEY={KEY}\nDEBUG=1\n")
        result = await apply(registry, ctx, v4a(
            "*** Update File: .env", f" OPENAI_API_KEY={REDACTED}", "-DEBUG=1", "+DEBUG=0",
        ))  # fmt: skip
        assert "error" in result and REDACTED in result["error"]
        assert f"OPENAI_API_KEY={KEY}\nDEBUG=1\n" == (tmp_path / ".env").read_text()

    async def test_context_only_patch_changes_nothing(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "a.txt").write_text("a\n")
        result = await apply(registry, ctx, v4a("*** Update File: a.txt", " a"))
        assert "The patch changes nothing" in result["error"]


class TestParsing:
    """A malformed patch is refused with the line or file at fault."""

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ("*** Begin Patch\n*** End Patch", "holds no file operation"),
            ("*** Begin Patch\nstray line\n*** Update File: a.txt\n-a\n+b\n*** End Patch", "line 1 ('stray line') is outside"),
            ("*** Begin Patch\n*** Add File: n.txt\nno plus\n*** End Patch", "does not start with '+'"),
            ("*** Begin Patch\n*** Update File: a.txt\n*** End Patch", "has no hunks"),
            ("*** Begin Patch\n*** Move File: a.txt -> \n*** End Patch", "names no destination"),
            ("*** Begin Patch\n*** Delete File: a.txt\n-a\n*** End Patch", "takes no lines"),
        ],
    )
    async def test_errors(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path, text: str, message: str) -> None:
        (tmp_path / "a.txt").write_text("a\n")
        result = await apply(registry, ctx, text)
        assert message in result["error"] and "a\n" == (tmp_path / "a.txt").read_text()

    async def test_hostile_path_named(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        """A path no file can have fails its operation with the reason; the session goes on."""
        (tmp_path / "a.txt").write_text("a\n")
        result = await apply(registry, ctx, v4a("*** Update File: a.txt", "-a", "+b", "*** Add File: bad\x00name", "+x"))
        assert "holds a NUL byte" in result["error"] and "a\n" == (tmp_path / "a.txt").read_text()

    async def test_missing_markers_and_crlf_tolerated(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "a.txt").write_text("a\nb\n")
        result = await apply(registry, ctx, "*** Update File: a.txt\r\n a\r\n-b\r\n+c\r\n\\ No newline at end of file\r\n")
        assert result["success"] is True and "a\nc\n" == (tmp_path / "a.txt").read_text()

    async def test_patch_argument_required(self, registry: ToolRegistry, ctx: LocalToolContext) -> None:
        result = await call(registry, ctx, "patch", mode="patch")
        assert "mode='patch' needs patch; missing: patch." in result["error"]


class TestLedger:
    """Every file a patch writes is noted as seen, so the model's next edit of it draws no stale warning."""

    async def test_written_files_noted(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "a.txt").write_text("a\n")
        await apply(registry, ctx, v4a("*** Update File: a.txt", "-a", "+b", "*** Add File: n.txt", "+n"))
        for name in ("a.txt", "n.txt"):
            assert os.stat(tmp_path / name).st_mtime_ns == ctx.file_reads.seen_mtime(str(tmp_path / name))
