"""Plain text out of the documents ``read_file`` renders: Word (``.docx``), Excel (``.xlsx``), Jupyter (``.ipynb``).

Standard library only: an Office document is a zip of XML parts, a notebook is JSON. What is shown
follows Hermes Agent's ``read_file``: a Word document's paragraphs (and here its tables, a row per
line), every visible sheet of a workbook with its rows tab-separated, and a notebook's cells, each
under a header naming its type and number (the cells' outputs are not shown, as in Hermes).

The files are hostile input. An archive is refused before anything is inflated when it declares too
many members, too large a member, too much in total or a compression ratio no real document has; a
member is never inflated past its cap even when its header lies; a document type definition (the
door to entity-expansion bombs) is refused, since Office parts never carry one; a part parsed whole
is refused past a number of elements (a parsed tree costs many times its text), while sheets and
shared strings are streamed; a sheet is cut at a fixed number of rows and columns, with a note.
"""

from __future__ import annotations

import io
import json
import posixpath
import zipfile
from collections.abc import Iterator
from typing import BinaryIO, Final
from xml.etree import ElementTree

import attrs

__all__ = ["EXTRACTABLE_SUFFIXES", "DocumentError", "Extracted", "extract_document", "is_document"]

EXTRACTABLE_SUFFIXES: Final = frozenset({".docx", ".xlsx", ".ipynb"})

MAX_ARCHIVE_BYTES: Final = 50 * 1024 * 1024
MAX_NOTEBOOK_BYTES: Final = 50 * 1024 * 1024
MAX_MEMBER_BYTES: Final = 32 * 1024 * 1024
MAX_TOTAL_BYTES: Final = 100 * 1024 * 1024
MAX_MEMBERS: Final = 1_024
MAX_RATIO: Final = 200
MAX_SHEET_ROWS: Final = 5_000
MAX_SHEET_COLUMNS: Final = 256
MAX_ELEMENTS: Final = 500_000

_W: Final = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_S: Final = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
_R: Final = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
_PR: Final = "{http://schemas.openxmlformats.org/package/2006/relationships}"


class DocumentError(ValueError):
    """A document that cannot be rendered as text (malformed, or past a safety cap); the message says which."""


@attrs.frozen
class Extracted:
    """A document's text and what was left out of it."""

    text: str
    kind: str
    notes: tuple[str, ...] = ()


def is_document(path: str) -> bool:
    """Whether ``read_file`` renders ``path`` as an extracted document (by its suffix)."""
    return posixpath.splitext(path.lower())[1] in EXTRACTABLE_SUFFIXES


def extract_document(path: str, handle: BinaryIO, size: int) -> Extracted:
    """The text of the open document ``handle`` (blocking; run in a thread).

    Raises:
        DocumentError: malformed, or larger than the caps allow.
    """
    suffix = posixpath.splitext(path.lower())[1]
    if suffix == ".ipynb":
        return _notebook(handle, size)
    if size > MAX_ARCHIVE_BYTES:
        raise DocumentError(f"the file is {size:,} bytes; documents over {MAX_ARCHIVE_BYTES:,} bytes are not extracted")
    try:
        with zipfile.ZipFile(handle) as archive:
            _check_archive(archive)
            return _docx(archive) if suffix == ".docx" else _xlsx(archive)
    except zipfile.BadZipFile as exc:
        raise DocumentError(f"not a valid {suffix[1:]} file (not a zip archive: {exc})") from None
    except (OSError, RuntimeError, NotImplementedError, EOFError) as exc:
        # zipfile raises these for encrypted members, unknown compression and truncated data.
        raise DocumentError(f"the archive cannot be read: {exc}") from None


def _notebook(handle: BinaryIO, size: int) -> Extracted:
    if size > MAX_NOTEBOOK_BYTES:
        raise DocumentError(f"the notebook is {size:,} bytes; notebooks over {MAX_NOTEBOOK_BYTES:,} bytes are not extracted")
    try:
        notebook = json.loads(handle.read(MAX_NOTEBOOK_BYTES + 1).decode("utf-8", errors="replace"))
    except (ValueError, RecursionError) as exc:
        raise DocumentError(f"not valid notebook JSON: {exc}") from None
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        # nbformat 3 kept the cells in worksheets.
        sheets = notebook.get("worksheets") if isinstance(notebook, dict) else None
        sheets = sheets if isinstance(sheets, list) else []
        cells = [c for w in sheets if isinstance(w, dict) and isinstance(w.get("cells"), list) for c in w["cells"]]
    numbers = {"markdown": 0, "code": 0, "raw": 0}
    out: list[str] = []
    for cell in cells:
        kind = cell.get("cell_type") if isinstance(cell, dict) else None
        if kind not in numbers:
            continue
        numbers[kind] += 1
        source = cell.get("source", "")
        text = "".join(s for s in source if isinstance(s, str)) if isinstance(source, list) else str(source)
        out += [f"# --- {kind} cell {numbers[kind]} ---", text.rstrip("\n"), ""]
    if not out:
        raise DocumentError("the notebook has no cells")
    return Extracted("\n".join(out).rstrip("\n"), "ipynb")


def _check_archive(archive: zipfile.ZipFile) -> None:
    members = [info for info in archive.infolist() if not info.is_dir()]
    if len(members) > MAX_MEMBERS:
        raise DocumentError(f"the archive has {len(members):,} members (at most {MAX_MEMBERS:,})")
    total = 0
    for info in members:
        total += info.file_size
        if info.file_size > MAX_MEMBER_BYTES or total > MAX_TOTAL_BYTES:
            raise DocumentError(f"the archive inflates past the extraction limit (member {info.filename})")
        if info.compress_size and info.file_size / info.compress_size > MAX_RATIO:
            raise DocumentError(f"member {info.filename} is compressed {info.file_size // info.compress_size}:1, like a zip bomb")


def _member(archive: zipfile.ZipFile, name: str) -> bytes:
    """A member's bytes, never inflated past its cap, refused when it declares a DTD."""
    try:
        with archive.open(name) as member:
            data = member.read(MAX_MEMBER_BYTES + 1)
    except KeyError:
        raise DocumentError(f"the archive has no {name}") from None
    if len(data) > MAX_MEMBER_BYTES:
        raise DocumentError(f"member {name} inflates past {MAX_MEMBER_BYTES:,} bytes")
    if b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        raise DocumentError(f"member {name} declares a DTD, which Office documents never do")
    return data


def _events(archive: zipfile.ZipFile, name: str) -> Iterator[tuple[str, ElementTree.Element]]:
    """``(event, element)`` of a member parsed incrementally ("start" and "end" events)."""
    try:
        yield from ElementTree.iterparse(io.BytesIO(_member(archive, name)), events=("start", "end"))
    except ElementTree.ParseError as exc:
        raise DocumentError(f"member {name} is not well-formed XML: {exc}") from None


def _xml(archive: zipfile.ZipFile, name: str) -> ElementTree.Element:
    """A member parsed whole, refused past :data:`MAX_ELEMENTS` elements (a tree costs far more than its text)."""
    count = 0
    root: ElementTree.Element | None = None
    for event, element in _events(archive, name):
        if event == "start":
            count += 1
            if count > MAX_ELEMENTS:
                raise DocumentError(f"member {name} has more than {MAX_ELEMENTS:,} XML elements")
            root = element if root is None else root
    if root is None:
        raise DocumentError(f"member {name} is empty")
    return root


def _run_text(node: ElementTree.Element) -> str:
    parts: list[str] = []
    for element in node.iter():
        if element.tag == f"{_W}t":
            parts.append(element.text or "")
        elif element.tag == f"{_W}tab":
            parts.append("\t")
        elif element.tag in (f"{_W}br", f"{_W}cr"):
            parts.append("\n")
    return "".join(parts)


def _docx(archive: zipfile.ZipFile) -> Extracted:
    body = _xml(archive, "word/document.xml").find(f"{_W}body")
    lines: list[str] = []
    for block in [] if body is None else list(body):
        if block.tag == f"{_W}p":
            lines += _run_text(block).split("\n")
        elif block.tag == f"{_W}tbl":
            for row in block.iter(f"{_W}tr"):
                cells = [" ".join(_run_text(p) for p in cell.iter(f"{_W}p")) for cell in row.findall(f"{_W}tc")]
                lines.append("\t".join(c.replace("\n", " ") for c in cells))
        else:
            # Content controls and the like wrap paragraphs of their own.
            lines += [line for p in block.iter(f"{_W}p") for line in _run_text(p).split("\n")]
    if not any(line.strip() for line in lines):
        raise DocumentError("the document has no text")
    return Extracted("\n".join(lines).rstrip("\n"), "docx")


def _xlsx(archive: zipfile.ZipFile) -> Extracted:
    names = set(archive.namelist())
    shared = _shared_strings(archive) if "xl/sharedStrings.xml" in names else []
    targets = _sheet_targets(archive) if "xl/_rels/workbook.xml.rels" in names else {}
    out: list[str] = []
    notes: list[str] = []
    for sheet in _xml(archive, "xl/workbook.xml").iter(f"{_S}sheet"):
        if sheet.get("state") in ("hidden", "veryHidden"):
            continue
        name = sheet.get("name", "Sheet")
        part = _sheet_part(targets.get(sheet.get(f"{_R}id", ""), ""))
        if part not in names:
            continue
        rows, cut = _sheet_rows(archive, part, shared)
        out.append(f"# --- sheet: {name} ---")
        out += ["\t".join(row) for row in rows] or ["(empty)"]
        out.append("")
        if cut:
            notes.append(
                f"Sheet {name!r} was cut to its first {MAX_SHEET_ROWS:,} rows and {MAX_SHEET_COLUMNS} columns."
            )
    if not out:
        raise DocumentError("the workbook has no visible sheet")
    return Extracted("\n".join(out).rstrip("\n"), "xlsx", tuple(notes))


def _shared_strings(archive: zipfile.ZipFile) -> list[str]:
    """The workbook's shared strings, streamed (each dropped from the tree once read)."""
    strings: list[str] = []
    for event, item in _events(archive, "xl/sharedStrings.xml"):
        if event == "end" and item.tag == f"{_S}si":
            strings.append("".join(t.text or "" for t in item.iter(f"{_S}t")))
            item.clear()
    return strings


def _sheet_targets(archive: zipfile.ZipFile) -> dict[str, str]:
    root = _xml(archive, "xl/_rels/workbook.xml.rels")
    return {rel.get("Id", ""): rel.get("Target", "") for rel in root.iter(f"{_PR}Relationship")}


def _sheet_part(target: str) -> str:
    target = target.lstrip("/")
    return posixpath.normpath(target if target.startswith("xl/") else f"xl/{target}")


def _column(ref: str) -> int:
    """The zero-based column of a cell reference such as ``AB12``."""
    index = 0
    for char in ref:
        if not char.isalpha():
            break
        index = index * 26 + ord(char.upper()) - ord("A") + 1
    return index - 1


def _sheet_rows(archive: zipfile.ZipFile, part: str, shared: list[str]) -> tuple[list[list[str]], bool]:
    """The sheet's rows (trailing empty ones dropped), and whether the caps cut it.

    Streamed: each row is dropped from the tree once read, and parsing stops at the row cap, so a
    sheet of millions of cells costs no more than the rows shown.
    """
    rows: list[list[str]] = []
    cut = False
    for event, row in _events(archive, part):
        if event != "end" or row.tag != f"{_S}row":
            continue
        if len(rows) == MAX_SHEET_ROWS:
            cut = True
            break
        cells: dict[int, str] = {}
        for cell in row.iter(f"{_S}c"):
            ref = cell.get("r")
            column = _column(ref) if ref else max(cells, default=-1) + 1
            if column >= MAX_SHEET_COLUMNS:
                cut = True
                continue
            cells[max(column, 0)] = _cell_value(cell, shared)
        rows.append([cells.get(i, "") for i in range(max(cells, default=-1) + 1)])
        row.clear()
    while rows and not any(value.strip() for value in rows[-1]):
        rows.pop()
    return rows, cut


def _cell_value(cell: ElementTree.Element, shared: list[str]) -> str:
    value = cell.findtext(f"{_S}v") or ""
    kind = cell.get("t", "")
    if kind == "s":
        index = int(value) if value.strip().isdigit() else -1
        return shared[index] if 0 <= index < len(shared) else ""
    if kind == "inlineStr":
        inline = cell.find(f"{_S}is")
        return "" if inline is None else "".join(t.text or "" for t in inline.iter(f"{_S}t"))
    if kind == "b":
        return "TRUE" if value.strip() in ("1", "true") else "FALSE"
    return value
