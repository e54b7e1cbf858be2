"""write_file and patch refuse sensitive paths, report a syntax check, and warn on a file changed behind the model's back."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.tools.edits.helpers import call
from tools.jail import SessionJail
from tools.registry import ToolRegistry
from tools.testing import LocalToolContext


@pytest.fixture
def stray() -> Any:
    """Paths a broken guard would create outside the test's directory; removed afterwards whatever happens."""
    made: list[Path] = []
    yield made
    for path in made:
        path.unlink(missing_ok=True)


class TestSensitivePaths:
    """System paths, the Docker socket, credential stores and the agent's own config are never written."""

    @pytest.mark.parametrize("directory", ["/etc", "/boot", "/usr/lib/systemd"])
    async def test_system_directories(self, registry: ToolRegistry, ctx: LocalToolContext, stray: list[Path], directory: str) -> None:
        path = Path(directory) / f"hermes-actors-test-{uuid.uuid4().hex}.conf"
        stray.append(path)
        result = await call(registry, ctx, "write_file", path=str(path), content="x")
        assert f"Refused: {path} is a protected system path" in result["error"] and "terminal" in result["error"]
        assert not path.exists()

    @pytest.mark.parametrize("socket", ["/var/run/docker.sock", "/run/docker.sock"])
    async def test_docker_socket(self, registry: ToolRegistry, ctx: LocalToolContext, socket: str) -> None:
        result = await call(registry, ctx, "patch", mode="replace", path=socket, old_string="a", new_string="b")
        assert "protected system path" in result["error"]

    async def test_credential_store_in_the_users_home(self, registry: ToolRegistry, ctx: LocalToolContext, stray: list[Path]) -> None:
        path = Path(os.path.expanduser("~/.ssh")) / f"hermes-actors-test-{uuid.uuid4().hex}"
        stray.append(path)
        result = await call(registry, ctx, "write_file", path=str(path), content="ssh-ed25519 AAAA")
        assert "is a credential store" in result["error"] and not path.exists()

    async def test_symlink_to_a_system_path(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path, stray: list[Path]) -> None:
        """Where the path really leads counts, not only how the model named it."""
        real = Path(f"/etc/hermes-actors-test-{uuid.uuid4().hex}")
        stray.append(real)
        (tmp_path / "innocent.txt").symlink_to(real)
        result = await call(registry, ctx, "write_file", path="innocent.txt", content="x")
        assert "protected system path" in result["error"] and not real.exists()

    @pytest.mark.parametrize("name", ["config.yaml", ".env"])
    async def test_agents_own_config(self, registry: ToolRegistry, tmp_path: Path, name: str) -> None:
        """Even where the sandbox policy would let it (the agent home not hidden), the agent's config is refused."""
        home = tmp_path / "agent-home"
        home.mkdir()
        (home / name).write_text("approvals:\n  mode: manual\n")
        ctx = LocalToolContext(home=home, cwd=tmp_path, jail=SessionJail.full_access(tmp_path / "elsewhere", str(tmp_path)))
        written = await call(registry, ctx, "write_file", path=str(home / name), content="approvals:\n  mode: off\n")
        patched = await call(registry, ctx, "patch", mode="replace", path=str(home / name), old_string="manual", new_string="off")
        v4a = await call(registry, ctx, "patch", mode="patch", patch=f"*** Update File: {home / name}\n-  mode: manual\n+  mode: off")
        for result in (written, patched, v4a):
            assert "this agent's own configuration" in result["error"]
        assert "approvals:\n  mode: manual\n" == (home / name).read_text()

    async def test_ordinary_path_allowed(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        """A project file named like a sensitive one elsewhere (config.yaml, .env) is written."""
        assert "error" not in await call(registry, ctx, "write_file", path="config.yaml", content="a: 1\n")
        assert "error" not in await call(registry, ctx, "write_file", path="etc/app.conf", content="x\n")


class TestLint:
    """Python, JSON, YAML and TOML are syntax-checked after the write; the finding is in the result, the file written."""

    @pytest.mark.parametrize(
        ("name", "content", "finding"),
        [
            ("bad.py", "def f(:\n    pass\n", "SyntaxError: invalid syntax (line 1, column 7)"),
            ("bad.json", '{"a": 1,}\n', "JSONDecodeError: Expecting property name enclosed in double quotes (line 1, column 9)"),
            ("bad.yaml", "a: [1, 2\nb: 3\n", "YAMLError: while parsing a flow sequence"),
            ("bad.toml", "a = \n", "TOMLDecodeError: Invalid value"),
        ],
    )
    async def test_error_reported(
        self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path, name: str, content: str, finding: str
    ) -> None:
        result = await call(registry, ctx, "write_file", path=name, content=content)
        assert "error" == result["lint"]["status"] and result["lint"]["output"].startswith(finding), result["lint"]
        assert content == (tmp_path / name).read_text()

    @pytest.mark.parametrize(("name", "content"), [("ok.py", "x = 1\n"), ("ok.json", "[1]\n"), ("ok.yml", "a: 1\n---\nb: !tag 2\n"), ("ok.toml", "a = 1\n")])
    async def test_clean_file(self, registry: ToolRegistry, ctx: LocalToolContext, name: str, content: str) -> None:
        assert {"status": "ok"} == (await call(registry, ctx, "write_file", path=name, content=content))["lint"]

    async def test_no_checker_no_report(self, registry: ToolRegistry, ctx: LocalToolContext) -> None:
        assert "lint" not in await call(registry, ctx, "write_file", path="notes.md", content="# x\n")

    async def test_patch_that_breaks_python(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "m.py").write_text("def f():\n    return 1\n")
        result = await call(registry, ctx, "patch", mode="replace", path="m.py", old_string="return 1", new_string="return (1")
        assert "error" == result["lint"]["status"] and "SyntaxError" in result["lint"]["output"]
        assert "message" not in result["lint"]

    async def test_error_already_there_is_said_so(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "m.json").write_text('{"a": 1,,}\n{"b": 2}\n')
        result = await call(registry, ctx, "patch", mode="replace", path="m.json", old_string='{"b": 2}', new_string='{"b": 3}')
        assert "error" == result["lint"]["status"] and "already in the file before the edit" in result["lint"]["message"]


class TestStaleWarning:
    """An edit of a file changed on disk since the model last saw it goes ahead with a warning; its own edits never warn."""

    async def test_changed_behind_the_models_back(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        path = tmp_path / "f.txt"
        first = await call(registry, ctx, "write_file", path="f.txt", content="one\ntwo\n")
        assert "_warning" not in first
        second = await call(registry, ctx, "patch", mode="replace", path="f.txt", old_string="one", new_string="ONE")
        assert "_warning" not in second, "the model's own write is what it has seen"
        path.write_text("ONE\ntwo\nthree\n")
        os.utime(path, ns=(1, 1))  # another process's edit, whatever the clock's resolution
        third = await call(registry, ctx, "patch", mode="replace", path="f.txt", old_string="two", new_string="TWO")
        assert f"Warning: {path} changed on disk since you last read it" in third["_warning"]
        assert "ONE\nTWO\nthree\n" == path.read_text()
        assert "_warning" not in await call(registry, ctx, "write_file", path="f.txt", content="x\n")

    async def test_read_then_changed(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        """What read_file notes in the session's ledger (the file as read) is what the edit compares with."""
        path = tmp_path / "f.txt"
        path.write_text("a\n")
        ctx.file_reads.note_read(str(path), path.stat().st_mtime_ns, (1, 500))
        assert "_warning" not in await call(registry, ctx, "patch", mode="replace", path="f.txt", old_string="a", new_string="b")
        ctx.file_reads.note_read(str(path), path.stat().st_mtime_ns, (1, 500))
        os.utime(path, ns=(1, 1))
        assert "changed on disk" in (await call(registry, ctx, "write_file", path="f.txt", content="c\n"))["_warning"]

    async def test_v4a_warns_per_file(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        await call(registry, ctx, "write_file", path="a.txt", content="a\n")
        os.utime(tmp_path / "a.txt", ns=(1, 1))
        result = await call(registry, ctx, "patch", mode="patch", patch="*** Update File: a.txt\n-a\n+b")
        assert "a.txt changed on disk" in result["_warning"]

    async def test_never_seen_file_no_warning(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "f.txt").write_text("a\n")
        assert "_warning" not in await call(registry, ctx, "patch", mode="replace", path="f.txt", old_string="a", new_string="b")


class TestLineEndings:
    """A CRLF file keeps CRLF when the model writes it with LF text."""

    async def test_write_file_keeps_crlf(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "w.bat").write_bytes(b"echo a\r\necho b\r\n")
        result = await call(registry, ctx, "write_file", path="w.bat", content="echo c\necho d\n")
        assert b"echo c\r\necho d\r\n" == (tmp_path / "w.bat").read_bytes() and 16 == result["bytes_written"]

    async def test_new_file_as_given(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        await call(registry, ctx, "write_file", path="n.txt", content="a\nb\n")
        assert b"a\nb\n" == (tmp_path / "n.txt").read_bytes()


class TestResultShape:
    """Results carry Hermes's fields."""

    async def test_write_file(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        result = await call(registry, ctx, "write_file", path="d/x.json", content="{}\n")
        shown = str(tmp_path / "d/x.json")
        assert {
            "bytes_written": 3, "dirs_created": True, "created": True, "lint": {"status": "ok"},
            "resolved_path": shown, "files_modified": [shown],
        } == result  # fmt: skip

    async def test_patch_replace(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "x.txt").write_text("a\n")
        result = await call(registry, ctx, "patch", mode="replace", path="x.txt", old_string="a", new_string="b")
        shown = str(tmp_path / "x.txt")
        assert {
            "success": True, "diff": "--- a/x.txt\n+++ b/x.txt\n@@ -1 +1 @@\n-a\n+b\n", "files_modified": [shown],
            "strategy": "exact", "replacements": 1, "resolved_path": shown,
        } == result  # fmt: skip
