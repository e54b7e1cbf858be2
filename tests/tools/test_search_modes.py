"""search_files as Hermes Agent offers it: offset, output_mode, context lines, newest files first; both engines agree."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tools.dispatch import dispatch
from tools.redact import REDACTED
from tools.registry import ToolRegistry
from tools.search import SEARCH_FILES_SCHEMA, find_ripgrep, make_search_handler
from tools.testing import LocalToolContext

RG = find_ripgrep()
ENGINES = [pytest.param(True, id="rg"), pytest.param(False, id="python")]
KEY = "sk-proj-" + "Ab3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF"

LINES = ["a", "hit one", "b", "c", "d", "e", "hit two", "hit three", "f", "g"]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    files = {
        "a.txt": "\n".join(LINES) + "\n",
        "b.txt": "hit\nhit\nhit\n",
        "c/d.txt": "nothing\n",
        "c/e.txt": f"hit {KEY}\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


async def search(tree: Path, ripgrep: bool, **args: Any) -> dict[str, Any]:
    registry = ToolRegistry()
    registry.register("search_files", "file", SEARCH_FILES_SCHEMA, make_search_handler(RG, use_ripgrep=ripgrep))
    ctx = LocalToolContext(home=tree.parent / "home", cwd=tree)
    result: dict[str, Any] = json.loads((await dispatch(registry, "search_files", args, ctx)).text)
    assert result.pop("engine", None) in (None, "ripgrep" if ripgrep else "python")
    return result


def rows(result: dict[str, Any]) -> list[tuple[str, int, bool]]:
    return [(m["path"], m["line"], m.get("context", False)) for m in result["matches"]]


@pytest.mark.parametrize("ripgrep", ENGINES)
class TestContent:
    """Matching lines in Hermes's shape, with context lines once each, paged by offset and limit."""

    async def test_shape(self, tree: Path, ripgrep: bool) -> None:
        result = await search(tree, ripgrep, pattern="hit t", path="a.txt")
        expected = [{"path": "a.txt", "line": 7, "content": "hit two"}, {"path": "a.txt", "line": 8, "content": "hit three"}]
        assert {"total_count": 2, "matches": expected, "truncated": False} == result

    async def test_context_lines(self, tree: Path, ripgrep: bool) -> None:
        result = await search(tree, ripgrep, pattern="hit", path="a.txt", context=1)
        # Line 6 is before "hit two"; 7 and 8 are both matches, so 8 is never context.
        expected = [("a.txt", n, n not in (2, 7, 8)) for n in (1, 2, 3, 6, 7, 8, 9)]
        assert expected == rows(result)

    async def test_offset_pages(self, tree: Path, ripgrep: bool) -> None:
        first = await search(tree, ripgrep, pattern="hit", limit=3)
        second = await search(tree, ripgrep, pattern="hit", limit=3, offset=first["next_offset"])
        third = await search(tree, ripgrep, pattern="hit", limit=3, offset=second["next_offset"])
        assert [("a.txt", 2), ("a.txt", 7), ("a.txt", 8)] == [r[:2] for r in rows(first)]
        assert [("b.txt", 1), ("b.txt", 2), ("b.txt", 3)] == [r[:2] for r in rows(second)]
        assert ([("c/e.txt", 1)], False) == ([r[:2] for r in rows(third)], third["truncated"])
        assert first["truncated"] and first["total_count_is_lower_bound"] and "offset=3" in first["note"]
        assert 7 == third["total_count"]

    async def test_redacted(self, tree: Path, ripgrep: bool) -> None:
        result = await search(tree, ripgrep, pattern="hit sk", context=2)
        assert [f"hit {REDACTED}"] == [m["content"] for m in result["matches"]]


@pytest.mark.parametrize("ripgrep", ENGINES)
class TestOutputModes:
    """files_only lists the matching files, count gives the matching lines per file; both page by file."""

    async def test_files_only(self, tree: Path, ripgrep: bool) -> None:
        result = await search(tree, ripgrep, pattern="hit", output_mode="files_only")
        assert {"total_count": 3, "files": ["a.txt", "b.txt", "c/e.txt"], "truncated": False} == result

    async def test_count(self, tree: Path, ripgrep: bool) -> None:
        result = await search(tree, ripgrep, pattern="hit", output_mode="count", path=".")
        assert {"a.txt": 3, "b.txt": 3, "c/e.txt": 1} == result["counts"]
        assert 7 == result["total_count"]

    async def test_count_paged(self, tree: Path, ripgrep: bool) -> None:
        result = await search(tree, ripgrep, pattern="hit", output_mode="count", offset=1, limit=1)
        assert ({"b.txt": 3}, True, 2) == (result["counts"], result["truncated"], result["next_offset"])


@pytest.mark.parametrize("ripgrep", ENGINES)
class TestFileNames:
    """target='files' lists the newest files first, paged by offset."""

    async def test_newest_first(self, tree: Path, ripgrep: bool) -> None:
        for age, rel in enumerate(["c/e.txt", "a.txt", "c/d.txt", "b.txt"]):
            stamp = 1_700_000_000 - age * 60
            os.utime(tree / rel, (stamp, stamp))
        result = await search(tree, ripgrep, pattern="*.txt", target="files")
        assert ["c/e.txt", "a.txt", "c/d.txt", "b.txt"] == result["files"]
        page = await search(tree, ripgrep, pattern="*.txt", target="files", offset=1, limit=2)
        assert (["a.txt", "c/d.txt"], True, 4) == (page["files"], page["truncated"], page["total_count"])


class TestArguments:
    """Hostile numbers get a clear error or a clamp, never a crash."""

    async def test_bad_output_mode(self, tree: Path) -> None:
        result = await search(tree, False, pattern="hit", output_mode="lines")
        assert "output_mode" in result["error"] and "files_only" in result["error"]

    async def test_negative_numbers_clamped(self, tree: Path) -> None:
        result = await search(tree, False, pattern="hit two", offset=-5, context=-2, limit=-1)
        assert [("a.txt", 7, False)] == rows(result)

    async def test_non_integer(self, tree: Path) -> None:
        result = await search(tree, False, pattern="hit", context="lots")
        assert "context" in result["error"]
