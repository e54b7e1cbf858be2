"""search_files never returns a piece of a private key, whichever of its lines a search hits, in any mode."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.jail.world import World, make_world
from tests.tools.real_key import key_body, leaked
from tools.jail import Launcher, SandboxMode
from tools.redact import REDACTED
from tools.search import find_ripgrep, make_search_handler
from tools.testing import LocalToolContext

RG = find_ripgrep()
ENGINES = [
    pytest.param(False, id="python"),
    pytest.param(True, id="ripgrep", marks=pytest.mark.skipif(RG is None, reason="ripgrep is not installed")),
]
BEFORE = ["# deploy notes", "host = build-7", "user = deploy"]
AFTER = ["# end of key", "port = 2222"]


@pytest.fixture
def project(tmp_path: Path, pem: str) -> Path:
    """A directory with ``deploy.txt``: three lines, the key, two lines."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / "deploy.txt").write_text("\n".join([*BEFORE, pem, *AFTER]) + "\n")
    return root


async def search(root: Path, ripgrep: bool, ctx: LocalToolContext | None = None, **args: Any) -> tuple[dict[str, Any], str]:
    """The result the model (and the store) gets: parsed, and as the text rendered."""
    ctx = ctx or LocalToolContext(home=root.parent / "home", cwd=root)
    rendered = (await make_search_handler(RG, use_ripgrep=ripgrep)(args, ctx)).render()
    return json.loads(rendered), rendered


@pytest.mark.parametrize("ripgrep", ENGINES)
class TestKeyBodyHit:
    """A search hitting lines inside a key's body shows them redacted, with or without context."""

    async def test_body_line_without_context(self, project: Path, pem: str, ripgrep: bool) -> None:
        """A pattern matching one body line: that line comes back as the marker; the BEGIN line is not near."""
        line = key_body(pem)[12]
        result, rendered = await search(project, ripgrep, pattern=re.escape(line[10:30]))
        assert [{"path": "deploy.txt", "line": 4 + 13, "content": REDACTED}] == result["matches"]
        assert [] == leaked(pem, rendered)

    async def test_body_line_with_context(self, project: Path, pem: str, ripgrep: bool) -> None:
        """`context: 3` around a body line: seven lines, each the marker."""
        line = key_body(pem)[12]
        result, rendered = await search(project, ripgrep, pattern=re.escape(line[10:30]), context=3)
        assert list(range(14, 21)) == [match["line"] for match in result["matches"]]
        assert {REDACTED} == {match["content"] for match in result["matches"]}
        assert [] == leaked(pem, rendered)

    async def test_every_line_with_context(self, project: Path, pem: str, ripgrep: bool) -> None:
        """A pattern matching every line, with context: the lines around the key as they are, the key's as the marker."""
        result, rendered = await search(project, ripgrep, pattern=".", context=3)
        contents = [match["content"] for match in result["matches"]]
        key_lines = len(pem.splitlines())
        assert [*BEFORE, *[REDACTED] * key_lines, *AFTER] == contents
        assert [] == leaked(pem, rendered)

    async def test_context_reaching_into_the_key(self, project: Path, pem: str, ripgrep: bool) -> None:
        """A hit just after the key, with context 3: the key's last lines shown around it are the marker."""
        result, rendered = await search(project, ripgrep, pattern="end of key", context=3)
        assert [REDACTED] * 3 + ["# end of key", "port = 2222"] == [match["content"] for match in result["matches"]]
        assert [] == leaked(pem, rendered)

    async def test_files_only_and_count(self, project: Path, pem: str, ripgrep: bool) -> None:
        """The modes that show no line name the file and count, and nothing else."""
        pattern = re.escape(key_body(pem)[5][:20])
        files, rendered_files = await search(project, ripgrep, pattern=pattern, output_mode="files_only")
        counts, rendered_counts = await search(project, ripgrep, pattern=pattern, output_mode="count")
        assert ["deploy.txt"] == files["files"]
        assert {"deploy.txt": 1} == counts["counts"]
        assert [] == leaked(pem, rendered_files + rendered_counts)


@pytest.mark.parametrize("ripgrep", ENGINES)
class TestKeyFarInAFile:
    """A key deep in a file bigger than one judged block is redacted wherever the blocks are cut."""

    async def test_key_after_a_megabyte(self, tmp_path: Path, pem: str, ripgrep: bool) -> None:
        """A 2 MB file with the key in its middle: a hit in the key's body shows the marker."""
        root = tmp_path / "big"
        root.mkdir()
        filler = [f"filler line {n:07d} " + "x" * 60 for n in range(14_000)]
        (root / "log.txt").write_text("\n".join([*filler, pem, *filler]) + "\n")
        line = key_body(pem)[3]
        result, rendered = await search(root, ripgrep, pattern=re.escape(line[5:25]), context=2)
        assert [REDACTED] * 5 == [match["content"] for match in result["matches"]]
        assert [] == leaked(pem, rendered)


@pytest.fixture
def world(launcher: Launcher) -> Iterator[World]:
    """A world whose sessions start ripgrep through the run's launcher, jailed as in a daemon."""
    yield from make_world(launcher)


@pytest.mark.parametrize("ripgrep", ENGINES)
class TestJailedSession:
    """In a jailed session (ripgrep runs in the jail, the lines are read again in the daemon) the key stays redacted."""

    async def test_workspace_write(self, world: World, pem: str, ripgrep: bool) -> None:
        (world.workspace / "deploy.txt").write_text("\n".join([*BEFORE, pem, *AFTER]) + "\n")
        ctx = world.context(SandboxMode.WORKSPACE_WRITE)
        result, rendered = await search(world.workspace, ripgrep, ctx, pattern=re.escape(key_body(pem)[7][:24]), context=1)
        assert [("deploy.txt", REDACTED)] * 3 == [(match["path"], match["content"]) for match in result["matches"]]
        assert [] == leaked(pem, rendered)
