"""``write_file`` and ``patch``: atomic edits of text files."""

from __future__ import annotations

import difflib
import json
import os
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import trio

from tools.dispatch import error_result
from tools.errors import ToolInputError
from tools.files._paths import BINARY_SNIFF_BYTES, looks_binary, not_found, resolve_path

if TYPE_CHECKING:
    from tools.context import ToolContext

__all__ = [
    "PATCH_SCHEMA",
    "WRITE_FILE_SCHEMA",
    "atomic_write",
    "patch_file",
    "patch_handler",
    "write_file_handler",
]

_MAX_CANDIDATES: Final = 10
_MAX_DIFF_CHARS: Final = 20_000

WRITE_FILE_SCHEMA: Final[dict[str, Any]] = {
    "name": "write_file",
    "description": (
        "Write a text file, replacing it entirely (parent directories are created). The write is "
        "atomic: readers see the old or the new content, never a mix. To change part of a file, use patch."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Path of the file to write."},
            "content": {"type": "string", "description": "The complete new content."},
        },
        "required": ["path", "content"],
    },
}

PATCH_SCHEMA: Final[dict[str, Any]] = {
    "name": "patch",
    "description": (
        "Replace an exact piece of text in a file and return a unified diff. old_string must match the "
        "file exactly (whitespace included) and be unique unless replace_all is true; include enough "
        "surrounding lines to make it unique."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Path of the file to edit."},
            "old_string": {"type": "string", "description": "Exact text to replace."},
            "new_string": {"type": "string", "description": "Replacement text."},
            "replace_all": {"type": "boolean", "description": "Replace every occurrence.", "default": False},
        },
        "required": ["path", "old_string", "new_string"],
    },
}


def atomic_write(path: Path, data: bytes, *, new_file_mode: int = 0o666) -> bool:
    """Write ``data`` to ``path`` through a temp file and a rename; returns True if created.

    Blocking: run in a thread.  Parents are created; an existing file keeps its
    mode, a new one gets ``new_file_mode`` filtered by the umask.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode: int | None = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    tmp = path.parent / f".{path.name[:64]}.{secrets.token_hex(6)}.tmp"
    # Creating with the final mode lets the umask apply, as for any other new file.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, new_file_mode if mode is None else 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return mode is None


def _write(path: Path, content: str) -> dict[str, Any]:
    if path.is_dir():
        raise ToolInputError(f"{path} is a directory; give a file path.")
    data = content.encode("utf-8")
    try:
        created = atomic_write(path, data)
    except PermissionError:
        raise ToolInputError(f"Permission denied writing {path}.") from None
    except OSError as exc:
        raise ToolInputError(f"Cannot write {path}: {exc.strerror or exc}.") from exc
    return {"path": str(path), "bytes_written": len(data), "created": created}


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _occurrence_lines(text: str, needle: str) -> list[int]:
    lines: list[int] = []
    start = text.find(needle)
    while start != -1:
        lines.append(_line_of(text, start))
        start = text.find(needle, start + 1)
    return lines


def _candidates(text: str, old: str) -> list[int]:
    """Line numbers where ``old`` probably was meant: same first line ignoring whitespace, else similar lines."""
    anchor = next((line.strip() for line in old.splitlines() if line.strip()), "")
    if not anchor:
        return []
    lines = text.splitlines()
    exact = [n for n, line in enumerate(lines, start=1) if anchor in line]
    if exact:
        return exact[:_MAX_CANDIDATES]
    stripped = [line.strip() for line in lines]
    close = difflib.get_close_matches(anchor, stripped, n=_MAX_CANDIDATES, cutoff=0.6)
    return sorted({n for n, line in enumerate(stripped, start=1) if line in close})[:_MAX_CANDIDATES]


def patch_file(path: Path, old: str, new: str, replace_all: bool = False) -> dict[str, Any]:
    """Replace ``old`` by ``new`` in ``path`` (blocking; run in a thread) and return the diff.

    Raises:
        ToolInputError: missing/binary file, empty or identical strings, no match, or an
            ambiguous match without ``replace_all`` (with candidate line numbers).
    """
    if old == "":
        raise ToolInputError("old_string is empty. To create or overwrite a whole file use write_file.")
    if old == new:
        raise ToolInputError("old_string and new_string are identical; there is nothing to change.")
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise not_found(path, " Use write_file to create a new file.") from None
    except IsADirectoryError:
        raise ToolInputError(f"{path} is a directory; give a file path.") from None
    except OSError as exc:
        raise ToolInputError(f"Cannot read {path}: {exc.strerror or exc}.") from exc
    if looks_binary(raw[:BINARY_SNIFF_BYTES]):
        raise ToolInputError(f"{path} looks like a binary file; patch edits text files only.")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolInputError(f"{path} is not valid UTF-8; patch cannot edit it safely.") from None
    found = _occurrence_lines(text, old)
    if not found:
        candidates = _candidates(text, old)
        where = (
            f" Similar text at line(s) {', '.join(map(str, candidates))}; read those lines with read_file "
            "and copy them exactly (whitespace and indentation included)."
            if candidates
            else " Read the file with read_file and copy the text exactly."
        )
        raise ToolInputError(f"old_string was not found in {path}.{where}")
    if len(found) > 1 and not replace_all:
        raise ToolInputError(
            f"old_string occurs {len(found)} times in {path} (lines {', '.join(map(str, found[:_MAX_CANDIDATES]))}"
            f"{', ...' if len(found) > _MAX_CANDIDATES else ''}). Include more surrounding lines to make it "
            "unique, or pass replace_all=true to change every occurrence."
        )
    updated = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    try:
        atomic_write(path, updated.encode("utf-8"))
    except OSError as exc:
        raise ToolInputError(f"Cannot write {path}: {exc.strerror or exc}.") from exc
    diff = "".join(
        difflib.unified_diff(
            text.splitlines(keepends=True),
            updated.splitlines(keepends=True),
            fromfile=f"a/{path.name}",
            tofile=f"b/{path.name}",
        )
    )
    if len(diff) > _MAX_DIFF_CHARS:
        diff = diff[:_MAX_DIFF_CHARS] + f"\n[... diff cut: {len(diff) - _MAX_DIFF_CHARS:,} more characters]"
    return {"path": str(path), "replacements": len(found) if replace_all else 1, "diff": diff}


async def write_file_handler(args: dict[str, Any], ctx: ToolContext) -> str:
    """Tool handler for ``write_file``."""
    path = resolve_path(ctx.shell.cwd, args["path"])
    try:
        result = await trio.to_thread.run_sync(_write, path, args["content"])
    except ToolInputError as exc:
        return error_result(str(exc))
    return json.dumps(result, ensure_ascii=False)


async def patch_handler(args: dict[str, Any], ctx: ToolContext) -> str:
    """Tool handler for ``patch``."""
    path = resolve_path(ctx.shell.cwd, args["path"])
    try:
        result = await trio.to_thread.run_sync(
            patch_file, path, args["old_string"], args["new_string"], bool(args.get("replace_all", False))
        )
    except ToolInputError as exc:
        return error_result(str(exc))
    return json.dumps(result, ensure_ascii=False)
