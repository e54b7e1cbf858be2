"""Benchmarks of the tool behaviours brought over from Hermes Agent; prints its figures.

What a model pays in latency for the fidelity (each through the real tool path, ``dispatch`` with a
``LocalToolContext`` over real files):

- patch on a 20,000-line file: an exact match, a match found by a loose strategy (the model's
  indentation off by one level), and a miss that runs the whole chain;
- read_file of a 2,000-paragraph .docx and a 5,000-row .xlsx (text extraction);
- a repeated read of an unchanged window (the short "unchanged" answer);
- web_extract's window of a 1 MB page with the full text saved (the windowing alone, no network);
- search_files files_only over 5,000 files, newest first.

Run: .venv/bin/python bench/bench_fidelity.py
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
import zipfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio

from tools.builtin import register_core_tools
from tools.dispatch import dispatch
from tools.registry import ToolRegistry
from tools.testing import LocalToolContext
from tools.web._window import window_page

ROUNDS = 7


async def _timed(run: Callable[[], Awaitable[Any]], rounds: int = ROUNDS) -> float:
    """Median wall time of ``run`` in milliseconds."""
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        await run()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def _source(lines: int) -> str:
    return "".join(f"def function_{n}(value):\n    total = value + {n}\n    return total\n\n" for n in range(lines // 4))


def _docx(path: Path, paragraphs: int) -> None:
    ns = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
    body = "".join(f"<w:p><w:r><w:t>Paragraph {n} of the report.</w:t></w:r></w:p>" for n in range(paragraphs))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/document.xml", f'<w:document xmlns:w="{ns}"><w:body>{body}</w:body></w:document>')


def _xlsx(path: Path, rows: int) -> None:
    s = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
    r = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    pr = "http://schemas.openxmlformats.org/package/2006/relationships"
    data = "".join(f'<row r="{n}"><c r="A{n}"><v>{n}</v></c><c r="B{n}"><v>{n * 2}</v></c></row>' for n in range(1, rows + 1))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("xl/workbook.xml", f'<workbook xmlns="{s}" xmlns:r="{r}"><sheets><sheet name="s" r:id="rId1"/></sheets></workbook>')
        archive.writestr("xl/_rels/workbook.xml.rels", f'<Relationships xmlns="{pr}"><Relationship Id="rId1" Target="worksheets/sheet1.xml" Type="x"/></Relationships>')
        archive.writestr("xl/worksheets/sheet1.xml", f'<worksheet xmlns="{s}"><sheetData>{data}</sheetData></worksheet>')


async def main() -> None:
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        registry = ToolRegistry()
        register_core_tools(registry)
        ctx = LocalToolContext(home=root / "home", cwd=root)
        figures: dict[str, float] = {}

        async def call(name: str, **args: Any) -> dict[str, Any]:
            reply = await dispatch(registry, name, args, ctx)
            return json.loads(reply.text)

        big = root / "big.py"
        original = _source(20_000)

        async def patch(old: str, new: str) -> None:
            big.write_text(original)
            await call("patch", path="big.py", old_string=old, new_string=new)

        figures["patch, exact match, 20,000 lines (ms)"] = await _timed(
            lambda: patch("    total = value + 4321\n", "    total = value + 1234\n"))
        figures["patch, loose match (indentation off), 20,000 lines (ms)"] = await _timed(
            lambda: patch("total = value + 4321\nreturn total\n", "total = value + 1\nreturn total\n"))
        figures["patch, no match, whole chain, 20,000 lines (ms)"] = await _timed(
            lambda: patch("this text is nowhere in the file\nnor this line\n", "x\n"), rounds=3)

        _docx(root / "report.docx", 2_000)
        _xlsx(root / "sheet.xlsx", 5_000)
        for name, label in (("report.docx", "read_file .docx, 2,000 paragraphs (ms)"), ("sheet.xlsx", "read_file .xlsx, 5,000 rows (ms)")):
            async def read_document(name: str = name) -> None:
                ctx.file_reads.forget_reads()
                await call("read_file", path=name)
            figures[label] = await _timed(read_document)

        (root / "small.txt").write_text("line\n" * 200)
        await call("read_file", path="small.txt")

        async def repeat() -> None:
            await call("read_file", path="small.txt")
            ctx.file_reads.note_tool_call("terminal")  # a real session calls other tools between reads

        figures["read_file, repeated unchanged window (ms)"] = await _timed(repeat)

        page = "word " * 200_000
        figures["web_extract window of a 1 MB page, full text saved (ms)"] = await _timed(
            lambda: trio.to_thread.run_sync(window_page, ctx.jail.policy, f"https://bench/{time.time()}", page, 15_000))

        tree = root / "tree"
        for n in range(5_000):
            folder = tree / f"d{n % 50}"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"f{n}.txt").write_text("x")

        async def newest() -> None:
            ctx.file_reads.note_tool_call("terminal")
            await call("search_files", pattern="*.txt", target="files", path="tree", output_mode="files_only")

        figures["search_files files_only, 5,000 files, newest first (ms)"] = await _timed(newest)
        width = max(map(len, figures))
        for label, value in figures.items():
            print(f"{label:<{width}}  {value:8.2f}")


if __name__ == "__main__":
    trio.run(main)
