"""read_file never returns a piece of a private key, whichever window of the file it is asked for."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actors.sandbox import Sandbox
from config.sandbox import CodeExecutionConfig
from tests.jail.fixtures import Jails
from tests.tools.real_key import key_body, leaked
from tools.dispatch import dispatch
from tools.files import read_file_handler
from tools.parallel import ToolConcurrencyGate
from tools.redact import REDACTED
from tools.registry import ToolRegistry
from tools.testing import LocalToolContext

BEFORE = ["# deploy notes", "host = build-7", "user = deploy"]
AFTER = ["# end of key", "port = 2222"]
BEGIN_LINE = len(BEFORE) + 1


@pytest.fixture
def ctx(tmp_path: Path, jails: Jails) -> LocalToolContext:
    """A session working in the test's directory: jailed, and in full-access."""
    home = tmp_path / "home"
    return LocalToolContext(home=home, cwd=tmp_path, jail=jails.jail(tmp_path, home=home))


@pytest.fixture
def deploy(tmp_path: Path, pem: str) -> Path:
    """``deploy.txt``: three lines, the key, two lines."""
    path = tmp_path / "deploy.txt"
    path.write_text("\n".join([*BEFORE, pem, *AFTER]) + "\n")
    return path


async def read(ctx: LocalToolContext, path: str = "deploy.txt", **args: Any) -> tuple[dict[str, Any], str]:
    """The result the model (and the store) gets from the real handler: parsed, and as the text rendered."""
    rendered = (await read_file_handler({"path": path, **args}, ctx)).render()
    return json.loads(rendered), rendered


def numbered(first: int, texts: list[str]) -> str:
    """``texts`` as read_file shows them, numbered from ``first``."""
    return "\n".join(f"{number}|{text}" for number, text in enumerate(texts, start=first))


class TestWindowInsideTheKey:
    """A window starting inside a key's body shows each of the key's lines as the marker, under its own number."""

    async def test_start_and_end_in_the_body(self, ctx: LocalToolContext, deploy: Path, pem: str) -> None:
        """Neither BEGIN nor END in the window: four body lines, four markers, the totals as for any window."""
        offset = BEGIN_LINE + 6
        result, rendered = await read(ctx, offset=offset, limit=4)
        assert numbered(offset, [REDACTED] * 4) == result["content"]
        assert (4, offset + 4, len(BEFORE) + len(pem.splitlines()) + len(AFTER)) == (
            result["lines_returned"], result["next_offset"], result["total_lines"]
        )
        assert "notes" not in result
        assert [] == leaked(pem, rendered)

    async def test_start_in_the_body_read_past_its_end(self, ctx: LocalToolContext, deploy: Path, pem: str) -> None:
        """From the body to the end of the file: the rest of the key (END included) as markers, then the lines after."""
        offset = BEGIN_LINE + 10
        result, rendered = await read(ctx, offset=offset)
        key_lines_left = len(pem.splitlines()) - 10
        assert numbered(offset, [REDACTED] * key_lines_left + AFTER) == result["content"]
        assert [] == leaked(pem, rendered)

    async def test_one_line_in_the_middle(self, ctx: LocalToolContext, deploy: Path, pem: str) -> None:
        middle = BEGIN_LINE + len(key_body(pem)) // 2
        result, rendered = await read(ctx, offset=middle, limit=1)
        assert f"{middle}|{REDACTED}" == result["content"]
        assert [] == leaked(pem, rendered)

    async def test_every_window(self, ctx: LocalToolContext, deploy: Path, pem: str) -> None:
        """Every offset of the file, with windows of 1, 2 and 7 lines: no piece of the key's body."""
        total = len(BEFORE) + len(pem.splitlines()) + len(AFTER)
        for limit in (1, 2, 7):
            for offset in range(1, total + 1):
                _, rendered = await read(ctx, offset=offset, limit=limit)
                assert [] == leaked(pem, rendered), (offset, limit)


class TestWindowWithTheBeginLine:
    """A window holding the key's BEGIN line shows the key once, as the marker on that line, as it always did."""

    async def test_whole_file(self, ctx: LocalToolContext, deploy: Path, pem: str) -> None:
        """The key's lines after its first are left out; the lines after the key keep their numbers."""
        result, rendered = await read(ctx)
        after_key = BEGIN_LINE + len(pem.splitlines())
        assert f"{numbered(1, BEFORE)}\n{BEGIN_LINE}|{REDACTED}\n{numbered(after_key, AFTER)}" == result["content"]
        assert "their numbers are skipped" in result["notes"][0]
        assert [] == leaked(pem, rendered)

    async def test_start_on_begin(self, ctx: LocalToolContext, deploy: Path, pem: str) -> None:
        """A window from the BEGIN line into the body: the marker, and the next window starts after it."""
        result, rendered = await read(ctx, offset=BEGIN_LINE, limit=5)
        assert f"{BEGIN_LINE}|{REDACTED}" == result["content"]
        assert BEGIN_LINE + 5 == result["next_offset"]
        assert [] == leaked(pem, rendered)

    async def test_start_before_end_in_the_body(self, ctx: LocalToolContext, deploy: Path, pem: str) -> None:
        result, rendered = await read(ctx, offset=2, limit=8)
        assert f"{numbered(2, BEFORE[1:])}\n{BEGIN_LINE}|{REDACTED}" == result["content"]
        assert [] == leaked(pem, rendered)


class TestLargeFile:
    """A key deep in a file larger than the part judged at once is redacted in any window of it."""

    async def test_key_after_a_megabyte(self, ctx: LocalToolContext, tmp_path: Path, pem: str) -> None:
        filler = [f"filler line {n:07d} " + "x" * 60 for n in range(14_000)]
        (tmp_path / "log.txt").write_text("\n".join([*filler, pem, *filler]) + "\n")
        begin = len(filler) + 1
        inside, _ = await read(ctx, "log.txt", offset=begin + 3, limit=4)
        across, rendered = await read(ctx, "log.txt", offset=begin + 20, limit=30)
        assert numbered(begin + 3, [REDACTED] * 4) == inside["content"]
        key_lines_left = len(pem.splitlines()) - 20
        assert numbered(begin + 20, [REDACTED] * key_lines_left + filler[: 30 - key_lines_left]) == across["content"]
        assert [] == leaked(pem, json.dumps(inside) + rendered)


class TestNotebook:
    """A key in a notebook's cell is redacted in a window of the notebook's text as in a plain file's."""

    async def test_window_inside_the_key(self, ctx: LocalToolContext, tmp_path: Path, pem: str) -> None:
        cell = {"cell_type": "code", "source": f'KEY = """\n{pem}\n"""\n'}
        (tmp_path / "n.ipynb").write_text(json.dumps({"cells": [cell], "nbformat": 4}))
        whole, _ = await read(ctx, "n.ipynb")
        begin = next(
            int(line.split("|")[0]) for line in whole["content"].splitlines() if line.endswith(f"|{REDACTED}")
        )
        result, rendered = await read(ctx, "n.ipynb", offset=begin + 2, limit=3)
        assert numbered(begin + 2, [REDACTED] * 3) == result["content"]
        assert [] == leaked(pem, json.dumps(whole) + rendered)


@pytest.fixture
def short_dir() -> Iterator[str]:
    """A private directory with a short path, for the sandbox's socket."""
    path = tempfile.mkdtemp(prefix="hx-t-", dir="/tmp")
    yield path
    shutil.rmtree(path, ignore_errors=True)


class TestExecuteCode:
    """A script's read_file goes through the same handler: it is given the key's lines as the marker too."""

    async def test_script_reads_inside_the_key(
        self, ctx: LocalToolContext, registry: ToolRegistry, deploy: Path, pem: str, short_dir: str
    ) -> None:
        async def call_tool(name: str, args: dict[str, Any]) -> Any:
            return await dispatch(registry, name, args, ctx)

        offset = BEGIN_LINE + 4
        code = (
            "from hermes_tools import read_file\n"
            f"print(read_file('deploy.txt', offset={offset}, limit=3)['content'])"
        )
        sandbox = Sandbox(
            code, call_tool=call_tool, allowed_tools=frozenset({"read_file"}), config=CodeExecutionConfig(),
            gate=ToolConcurrencyGate(registry, 8), cwd=lambda: ctx.shell.cwd, base_dir=short_dir, jail=ctx.jail,
        )  # fmt: skip
        result = await sandbox.run()
        assert (numbered(offset, [REDACTED] * 3) + "\n", 1) == (result.output, result.tool_calls_made)
        assert [] == leaked(pem, result.tool_result().render())
