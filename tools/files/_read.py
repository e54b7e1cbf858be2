"""``read_file``: a window of a text file with line numbers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import attrs
import trio

from tools.dispatch import error_result
from tools.errors import ToolInputError
from tools.files._paths import BINARY_SNIFF_BYTES, looks_binary, not_found, resolve_path

if TYPE_CHECKING:
    from tools.context import ToolContext

__all__ = ["MAX_FILE_BYTES", "MAX_LIMIT", "READ_FILE_SCHEMA", "ReadWindow", "read_file_handler", "read_window"]

DEFAULT_LIMIT: Final = 500
MAX_LIMIT: Final = 2_000
MAX_LINE_CHARS: Final = 2_000
MAX_OUTPUT_CHARS: Final = 100_000
MAX_FILE_BYTES: Final = 100 * 1024 * 1024

READ_FILE_SCHEMA: Final[dict[str, Any]] = {
    "name": "read_file",
    "description": (
        "Read a text file with line numbers, a window at a time. Paths are relative to the session's "
        "working directory. Use offset/limit to page through long files; the result tells the total "
        "line count and the next offset. Binary files are refused."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Path of the file to read."},
            "offset": {"type": "integer", "description": "First line to return (1-based).", "minimum": 1, "default": 1},
            "limit": {
                "type": "integer",
                "description": "Maximum number of lines to return (at most 2,000).",
                "minimum": 1,
                "maximum": MAX_LIMIT,
                "default": DEFAULT_LIMIT,
            },
        },
        "required": ["path"],
    },
}


@attrs.frozen
class ReadWindow:
    """What ``read_window`` found: numbered lines plus totals."""

    path: str
    content: str
    offset: int
    lines_returned: int
    total_lines: int
    file_size: int
    next_offset: int | None
    notes: tuple[str, ...] = ()

    def to_json(self) -> str:
        """The tool result."""
        data: dict[str, Any] = attrs.asdict(self)
        data["notes"] = list(self.notes)
        if not self.notes:
            del data["notes"]
        if self.next_offset is None:
            del data["next_offset"]
        return json.dumps(data, ensure_ascii=False)


def read_window(path: Path, offset: int = 1, limit: int = DEFAULT_LIMIT) -> ReadWindow:
    """Read lines ``offset`` .. ``offset + limit - 1`` of ``path`` (blocking; run in a thread).

    Raises:
        ToolInputError: missing file, directory, binary or oversized file, offset past the end.
    """
    limit = max(1, min(limit, MAX_LIMIT))
    offset = max(1, offset)
    try:
        size = path.stat().st_size
        if path.is_dir():
            raise ToolInputError(
                f"{path} is a directory. List it with search_files(target='files', path='{path}')."
            )
        if size > MAX_FILE_BYTES:
            raise ToolInputError(
                f"{path} is {size / 1024 / 1024:.0f} MB, too large for read_file (limit "
                f"{MAX_FILE_BYTES // 1024 // 1024} MB). Find the relevant lines with search_files, or use "
                "the terminal (head, tail, sed -n 'A,Bp')."
            )
        with path.open("rb") as handle:
            if looks_binary(handle.read(BINARY_SNIFF_BYTES)):
                raise ToolInputError(
                    f"{path} looks like a binary file ({size:,} bytes); read_file reads text only. "
                    "Inspect it with the terminal (file, xxd | head, strings)."
                )
            handle.seek(0)
            return _collect(path, handle, offset, limit, size)
    except FileNotFoundError:
        raise not_found(path) from None
    except PermissionError:
        raise ToolInputError(f"Permission denied reading {path}.") from None
    except OSError as exc:
        raise ToolInputError(f"Cannot read {path}: {exc.strerror or exc}.") from exc


def _collect(path: Path, handle: Any, offset: int, limit: int, size: int) -> ReadWindow:
    out: list[str] = []
    chars = 0
    total = 0
    notes: list[str] = []
    stopped_at: int | None = None
    for total, raw in enumerate(handle, start=1):
        if total < offset or total >= offset + limit or stopped_at is not None:
            continue
        line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        if len(line) > MAX_LINE_CHARS:
            line = f"{line[:MAX_LINE_CHARS]}... [line truncated: {len(line):,} chars]"
        numbered = f"{total:>6}|{line}"
        if chars + len(numbered) > MAX_OUTPUT_CHARS and out:
            stopped_at = total
            notes.append(f"Output stopped at line {total} to stay under {MAX_OUTPUT_CHARS:,} characters.")
            continue
        out.append(numbered)
        chars += len(numbered) + 1
    if total and offset > total:
        raise ToolInputError(f"offset {offset} is past the end of {path} ({total} lines).")
    last = offset + len(out) - 1
    next_offset = last + 1 if last < total else None
    return ReadWindow(
        path=str(path),
        content="\n".join(out),
        offset=offset,
        lines_returned=len(out),
        total_lines=total,
        file_size=size,
        next_offset=next_offset,
        notes=tuple(notes),
    )


async def read_file_handler(args: dict[str, Any], ctx: ToolContext) -> str:
    """Tool handler for ``read_file``."""
    path = resolve_path(ctx.shell.cwd, args["path"])
    try:
        window = await trio.to_thread.run_sync(
            read_window, path, int(args.get("offset", 1)), int(args.get("limit", DEFAULT_LIMIT))
        )
    except ToolInputError as exc:
        return error_result(str(exc))
    return window.to_json()
