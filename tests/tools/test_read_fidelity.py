"""read_file as Hermes Agent does it: the compact gutter, repeat reads, and text out of documents."""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path
from typing import Any

from tools.dispatch import dispatch
from tools.files._extract import MAX_SHEET_ROWS
from tools.redact import REDACTED
from tools.registry import ToolRegistry
from tools.results import ToolReply
from tools.testing import LocalToolContext

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
S = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
PR = "http://schemas.openxmlformats.org/package/2006/relationships"
KEY = "sk-proj-" + "Ab3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF"


async def read(registry: ToolRegistry, ctx: LocalToolContext, **args: Any) -> tuple[dict[str, Any], ToolReply]:
    reply = await dispatch(registry, "read_file", args, ctx)
    return json.loads(reply.text), reply


def docx(path: Path, body: str) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/document.xml", f'<w:document xmlns:w="{W}"><w:body>{body}</w:body></w:document>')


def para(text: str) -> str:
    return f"<w:p><w:r><w:t>{text}</w:t></w:r></w:p>"


def xlsx(path: Path, sheets: dict[str, str], shared: list[str], hidden: tuple[str, ...] = ()) -> None:
    hide = ' state="hidden"'
    entries = "".join(
        f'<sheet name="{name}" sheetId="{i}" r:id="rId{i}"{hide if name in hidden else ""}/>'
        for i, name in enumerate(sheets, start=1)
    )
    rels = "".join(
        f'<Relationship Id="rId{i}" Target="worksheets/sheet{i}.xml" Type="x"/>' for i in range(1, len(sheets) + 1)
    )
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("xl/workbook.xml", f'<workbook xmlns="{S}" xmlns:r="{R}"><sheets>{entries}</sheets></workbook>')
        archive.writestr("xl/_rels/workbook.xml.rels", f'<Relationships xmlns="{PR}">{rels}</Relationships>')
        strings = "".join(f"<si><t>{s}</t></si>" for s in shared)
        archive.writestr("xl/sharedStrings.xml", f'<sst xmlns="{S}">{strings}</sst>')
        for i, rows in enumerate(sheets.values(), start=1):
            archive.writestr(f"xl/worksheets/sheet{i}.xml", f'<worksheet xmlns="{S}"><sheetData>{rows}</sheetData></worksheet>')


class TestGutter:
    """Each line is shown as N|text, unpadded, and paging still works with it."""

    async def test_compact_numbers(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "f.py").write_text("".join(f"x = {i}\n" for i in range(1, 13)))
        result, _ = await read(registry, ctx, path="f.py", offset=9, limit=3)
        assert "9|x = 9\n10|x = 10\n11|x = 11" == result["content"]
        assert 12 == result["next_offset"]


class TestRepeatReads:
    """An unchanged window read again is answered short; the 3rd read warns, the 4th is refused."""

    async def test_second_read_is_unchanged(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "a.txt").write_text("alpha\nbeta\n")
        first, _ = await read(registry, ctx, path="a.txt")
        second, reply = await read(registry, ctx, path="a.txt")
        assert "1|alpha\n2|beta" == first["content"]
        assert "unchanged" == second["status"] and "content" not in second and not second["content_returned"]
        assert "_warning" not in second and not reply.counts_as_failure

    async def test_warning_then_block(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "a.txt").write_text("alpha\n")
        for _ in range(2):
            await read(registry, ctx, path="a.txt")
        third, _ = await read(registry, ctx, path="a.txt")
        assert "unchanged" == third["status"] and "refused" in third["_warning"]
        fourth, reply = await read(registry, ctx, path="a.txt")
        assert reply.counts_as_failure and "read number 4" in fourth["error"]

    async def test_another_tool_in_between_breaks_the_run(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        """The loop check counts identical reads in a row; the unchanged answer stays (its content is in the conversation)."""
        (tmp_path / "a.txt").write_text("alpha\n")
        for _ in range(3):
            answer, _ = await read(registry, ctx, path="a.txt")
        assert "_warning" in answer
        await dispatch(registry, "todo", {"todos": []}, ctx)
        for _ in range(2):
            answer, reply = await read(registry, ctx, path="a.txt")
            assert "unchanged" == answer["status"] and "_warning" not in answer and not reply.counts_as_failure

    async def test_identical_searches_are_counted_as_reads_are(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        """The same search four times in a row is refused, as the same read is; a read in between breaks it."""
        (tmp_path / "a.txt").write_text("alpha\n")

        async def search() -> dict[str, Any]:
            return json.loads((await dispatch(registry, "search_files", {"pattern": "alpha"}, ctx)).text)

        answers = [await search() for _ in range(3)]
        assert [1, 1, 1] == [a["total_count"] for a in answers] and "_warning" in answers[2] and "_warning" not in answers[1]
        assert "refused" in (await search())["error"].lower()
        await read(registry, ctx, path="a.txt")
        assert 1 == (await search())["total_count"]

    async def test_other_window_is_read(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "a.txt").write_text("alpha\nbeta\n")
        await read(registry, ctx, path="a.txt")
        other, _ = await read(registry, ctx, path="a.txt", offset=2)
        assert "2|beta" == other["content"]

    async def test_changed_file_is_read_again(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        target = tmp_path / "a.txt"
        target.write_text("alpha\n")
        await read(registry, ctx, path="a.txt")
        target.write_text("gamma\n")
        os.utime(target, ns=(target.stat().st_atime_ns, target.stat().st_mtime_ns + 1_000_000_000))
        again, _ = await read(registry, ctx, path="a.txt")
        assert "1|gamma" == again["content"]

    async def test_compression_forgets_reads(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "a.txt").write_text("alpha\n")
        await read(registry, ctx, path="a.txt")
        ctx.file_reads.forget_reads()
        again, _ = await read(registry, ctx, path="a.txt")
        assert "1|alpha" == again["content"]

    async def test_failed_read_is_not_counted(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "a.txt").write_text("alpha\n")
        await read(registry, ctx, path="a.txt", offset=5)
        result, _ = await read(registry, ctx, path="a.txt", offset=5)
        assert "past the end" in result["error"]


class TestDocx:
    """A Word document reads as its paragraphs, its tables a row per line, redacted and paged."""

    async def test_paragraphs_and_table(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        cell = "<w:tc>{}</w:tc>"
        table = f"<w:tbl><w:tr>{cell.format(para('name'))}{cell.format(para('qty'))}</w:tr>" \
                f"<w:tr>{cell.format(para('bolt'))}{cell.format(para('12'))}</w:tr></w:tbl>"
        docx(tmp_path / "r.docx", para("Report") + table + para(f"key {KEY}"))
        result, _ = await read(registry, ctx, path="r.docx")
        assert f"1|Report\n2|name\tqty\n3|bolt\t12\n4|key {REDACTED}" == result["content"]
        assert "docx" == result["extracted_from"]
        page, _ = await read(registry, ctx, path="r.docx", offset=3, limit=1)
        assert ("3|bolt\t12", 4) == (page["content"], page["next_offset"])

    async def test_malformed_xml(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        with zipfile.ZipFile(tmp_path / "bad.docx", "w") as archive:
            archive.writestr("word/document.xml", "<w:document><unclosed>")
        result, reply = await read(registry, ctx, path="bad.docx")
        assert reply.counts_as_failure and "not well-formed XML" in result["error"]

    async def test_not_a_zip(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "fake.docx").write_text("plain words\n")
        result, _ = await read(registry, ctx, path="fake.docx")
        assert "not a zip archive" in result["error"]

    async def test_zip_bomb_refused(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        with zipfile.ZipFile(tmp_path / "bomb.docx", "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr("word/document.xml", b"\0" * (20 * 1024 * 1024))
        result, _ = await read(registry, ctx, path="bomb.docx")
        assert "zip bomb" in result["error"]

    async def test_element_flood_refused(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        with zipfile.ZipFile(tmp_path / "flood.docx", "w", zipfile.ZIP_STORED) as archive:
            archive.writestr("word/document.xml", f'<w:document xmlns:w="{W}"><w:body>{"<w:p/>" * 600_000}</w:body></w:document>')
        result, _ = await read(registry, ctx, path="flood.docx")
        assert "more than 500,000 XML elements" in result["error"]

    async def test_entity_expansion_refused(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        laughs = '<!DOCTYPE d [<!ENTITY a "lol"><!ENTITY b "&a;&a;&a;&a;">]>'
        with zipfile.ZipFile(tmp_path / "lol.docx", "w") as archive:
            archive.writestr("word/document.xml", f'{laughs}<w:document xmlns:w="{W}"><w:body>{para("&b;")}</w:body></w:document>')
        result, _ = await read(registry, ctx, path="lol.docx")
        assert "DTD" in result["error"]


class TestXlsx:
    """A workbook reads as its visible sheets, rows tab-separated, huge sheets cut with a note."""

    async def test_sheets_and_cells(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        rows = (
            '<row r="1"><c r="A1" t="s"><v>0</v></c><c r="C1" t="inlineStr"><is><t>note</t></is></c></row>'
            '<row r="2"><c r="A2"><v>3.5</v></c><c r="B2" t="b"><v>1</v></c></row>'
        )
        xlsx(tmp_path / "b.xlsx", {"Prices": rows, "Secret": rows, "Empty": ""}, ["item"], hidden=("Secret",))
        result, _ = await read(registry, ctx, path="b.xlsx")
        expected = "1|# --- sheet: Prices ---\n2|item\t\tnote\n3|3.5\tTRUE\n4|\n5|# --- sheet: Empty ---\n6|(empty)"
        assert expected == result["content"]

    async def test_huge_sheet_cut(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        rows = "".join(f'<row r="{i}"><c r="A{i}"><v>{i}</v></c></row>' for i in range(1, MAX_SHEET_ROWS + 50))
        xlsx(tmp_path / "big.xlsx", {"Data": rows}, [])
        result, _ = await read(registry, ctx, path="big.xlsx", offset=MAX_SHEET_ROWS + 1, limit=10)
        assert f"{MAX_SHEET_ROWS + 1}|{MAX_SHEET_ROWS}" == result["content"]
        assert any("cut to its first" in note for note in result["notes"])


class TestNotebook:
    """A notebook reads as its cells, each under a header naming its type and number."""

    async def test_cells(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        cells = [
            {"cell_type": "markdown", "source": ["# Title\n", "intro"]},
            {"cell_type": "code", "source": "print(1)\n", "outputs": [{"text": "1\n"}]},
            {"cell_type": "code", "source": ["x = 2"]},
        ]
        (tmp_path / "n.ipynb").write_text(json.dumps({"cells": cells, "nbformat": 4}))
        result, _ = await read(registry, ctx, path="n.ipynb")
        expected = [
            "1|# --- markdown cell 1 ---", "2|# Title", "3|intro", "4|",
            "5|# --- code cell 1 ---", "6|print(1)", "7|",
            "8|# --- code cell 2 ---", "9|x = 2",
        ]
        assert expected == result["content"].split("\n")
        assert "ipynb" == result["extracted_from"]

    async def test_broken_json(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "n.ipynb").write_text('{"cells": [')
        result, _ = await read(registry, ctx, path="n.ipynb")
        assert "not valid notebook JSON" in result["error"]

    async def test_deeply_nested_json(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "n.ipynb").write_text("[" * 200_000 + "]" * 200_000)
        result, _ = await read(registry, ctx, path="n.ipynb")
        assert "not valid notebook JSON" in result["error"]

