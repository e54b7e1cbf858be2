"""The V4A patch format (``patch`` with ``mode='patch'``): parsing it into file operations.

The format Hermes Agent accepts (``tools/patch_parser.py``), itself from OpenAI's Codex::

    *** Begin Patch
    *** Update File: src/app.py
    *** Move to: src/main.py          (optional: rename after editing)
    @@ def run @@                      (a hunk; the text after @@ is a hint where it is)
     unchanged context line
    -removed line
    +added line
    *** Add File: notes.txt
    +every line of the new file
    *** Delete File: old.txt
    *** Move File: a.txt -> b.txt
    *** End Patch

Markers are whole lines. As in Hermes, a line inside an update hunk with no prefix counts as
context, ``\\ No newline at end of file`` and ``*** End of File`` are skipped, and both markers
are optional (the whole text is read when they are missing). Unlike the newest Hermes, which
refuses it, ``*** Move to:`` is honoured, as Codex defines it.
"""

from __future__ import annotations

import enum
import re
from typing import Final

import attrs

from tools.errors import ToolInputError

__all__ = ["FileOp", "Hunk", "OpKind", "PatchParseError", "parse_patch"]

_BEGIN: Final = re.compile(r"\*\*\*\s*Begin\s+Patch\s*")
_END: Final = re.compile(r"\*\*\*\s*End\s+Patch\s*")
_END_OF_FILE: Final = re.compile(r"\*\*\*\s*End\s+of\s+File\s*")
_MOVE_TO: Final = re.compile(r"\*\*\*\s*Move\s+to:\s*(.*)")
_MOVE_FILE: Final = re.compile(r"\*\*\*\s*Move\s+File:\s*(.+?)\s*->\s*(.*)")
_HINT: Final = re.compile(r"@@\s*(.*?)\s*(?:@@\s*)?")


class OpKind(enum.Enum):
    """What one operation of a patch does."""

    ADD = "add"
    UPDATE = "update"
    DELETE = "delete"
    MOVE = "move"


_HEADERS: Final = (
    (OpKind.UPDATE, re.compile(r"\*\*\*\s*Update\s+File:\s*(.*)")),
    (OpKind.ADD, re.compile(r"\*\*\*\s*Add\s+File:\s*(.*)")),
    (OpKind.DELETE, re.compile(r"\*\*\*\s*Delete\s+File:\s*(.*)")),
)


class PatchParseError(ToolInputError):
    """The patch text is not a V4A patch this tool can apply; says which line or file is wrong."""


@attrs.define
class Hunk:
    """One ``@@`` section of an update: its hint and its lines as (prefix, text), prefix one of `` ``, ``-``, ``+``."""

    hint: str | None = None
    lines: list[tuple[str, str]] = attrs.field(factory=list)

    def before(self) -> str:
        """The text the hunk expects in the file (context and removed lines)."""
        return "\n".join(text for prefix, text in self.lines if prefix != "+")

    def after(self) -> str:
        """The text the hunk leaves (context and added lines)."""
        return "\n".join(text for prefix, text in self.lines if prefix != "-")

    def changes(self) -> bool:
        """Whether the hunk adds or removes anything (a context-only hunk only anchors)."""
        return any(prefix != " " for prefix, _text in self.lines)


@attrs.define
class FileOp:
    """One file operation of a patch.

    Attributes:
        kind: what it does.
        path: the file, as the patch names it.
        new_path: where an update's result or a moved file goes (None: stays).
        hunks: an update's hunks.
        added: an added file's lines.
    """

    kind: OpKind
    path: str
    new_path: str | None = None
    hunks: list[Hunk] = attrs.field(factory=list)
    added: list[str] = attrs.field(factory=list)


def _body(text: str) -> list[str]:
    """The lines between the begin and end markers (all lines when they are missing), CRs dropped."""
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    begin = next((n for n, line in enumerate(lines) if _BEGIN.fullmatch(line)), -1)
    end = next((n for n, line in enumerate(lines) if n > begin and _END.fullmatch(line)), len(lines))
    return lines[begin + 1 : end]


def _header(line: str) -> FileOp | None:
    for kind, pattern in _HEADERS:
        if match := pattern.fullmatch(line):
            return FileOp(kind, match.group(1).strip())
    if match := _MOVE_FILE.fullmatch(line):
        return FileOp(OpKind.MOVE, match.group(1).strip(), new_path=match.group(2).strip())
    return None


def _trim_hunks(op: FileOp) -> None:
    """Drop empty hunks and blank context lines trailing a hunk (a blank line before the next marker)."""
    for hunk in op.hunks:
        while hunk.lines and hunk.lines[-1] == (" ", ""):
            hunk.lines.pop()
    op.hunks = [hunk for hunk in op.hunks if hunk.lines]


def _check(ops: list[FileOp]) -> None:
    problems = []
    for op in ops:
        label = f"*** {op.kind.value.capitalize()} File: {op.path}"
        if not op.path:
            problems.append(f"'{label}' names no file")
        if op.kind is OpKind.UPDATE and not op.hunks and op.new_path is None:
            problems.append(f"'{label}' has no hunks (lines starting with ' ', '-' or '+')")
        if op.kind is OpKind.MOVE and not op.new_path:
            problems.append(f"'*** Move File: {op.path} -> ...' names no destination")
        if op.new_path == "":
            problems.append(f"'*** Move to:' after '{label}' names no file")
    if problems:
        raise PatchParseError("The patch could not be read: " + "; ".join(problems) + ".")


def parse_patch(text: str) -> list[FileOp]:
    """The file operations of a V4A patch, in order.

    Raises:
        PatchParseError: no operation, a line outside any operation, a header without a path, an
            update without hunks, an add line without ``+``.
    """
    ops: list[FileOp] = []
    current: FileOp | None = None
    for number, line in enumerate(_body(text), start=1):
        header = _header(line)
        if header is not None:
            current = header
            ops.append(current)
            if current.kind is OpKind.MOVE:
                current = None
            continue
        if _END_OF_FILE.fullmatch(line) or line.startswith("\\"):
            continue
        if current is None:
            if line.strip():
                raise PatchParseError(
                    f"The patch could not be read: line {number} ({line[:60]!r}) is outside any file operation; "
                    "start each file with '*** Update File: <path>', '*** Add File: <path>' or '*** Delete File: <path>'."
                )
            continue
        if current.kind is OpKind.ADD:
            if line.startswith("+"):
                current.added.append(line[1:])
            elif line.strip():
                raise PatchParseError(
                    f"The patch could not be read: in '*** Add File: {current.path}', line {number} does not start "
                    "with '+'; every line of an added file starts with '+'."
                )
            continue
        if current.kind is OpKind.DELETE:
            if line.strip():
                raise PatchParseError(
                    f"The patch could not be read: '*** Delete File: {current.path}' takes no lines (line {number})."
                )
            continue
        if move := _MOVE_TO.fullmatch(line):
            current.new_path = move.group(1).strip()
        elif line.startswith("@@"):
            hint = _HINT.fullmatch(line)
            current.hunks.append(Hunk(hint.group(1) or None if hint else None))
        else:
            if not current.hunks:
                current.hunks.append(Hunk())
            # A line with no prefix is context, as in Hermes; an empty one is a blank context line.
            prefix, rest = (line[0], line[1:]) if line[:1] in (" ", "-", "+") else (" ", line)
            current.hunks[-1].lines.append((prefix, rest))
    for op in ops:
        _trim_hunks(op)
    if not ops:
        raise PatchParseError(
            "The patch holds no file operation. Give '*** Begin Patch', then '*** Update File: <path>' (or "
            "Add/Delete File) with its lines, then '*** End Patch'."
        )
    _check(ops)
    return ops
