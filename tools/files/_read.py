"""``read_file``: a window of a text file with line numbers."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Final

import attrs
import trio

from tools.errors import ToolInputError
from tools.files._guard import Target, open_text_source, read_target
from tools.files._paths import BINARY_SNIFF_BYTES, looks_binary, not_found
from tools.jail.policy import JailPolicy
from tools.redact import REDACTED, redact_secrets
from tools.results import ToolResult

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

    def tool_result(self) -> ToolResult:
        """The tool result."""
        data: dict[str, Any] = attrs.asdict(self)
        data["notes"] = list(self.notes)
        if not self.notes:
            del data["notes"]
        if self.next_offset is None:
            del data["next_offset"]
        return ToolResult(data)


def read_window(policy: JailPolicy, target: Target, offset: int = 1, limit: int = DEFAULT_LIMIT) -> ReadWindow:
    """Read lines ``offset`` .. ``offset + limit - 1`` of a checked target (blocking; run in a thread).

    The numbered lines are redacted: a secret in the file reaches the model as ``[REDACTED]``.

    Raises:
        ToolInputError: missing file, directory, binary or oversized file, offset past the end.
        PathRefused: the file opened is not the one checked (swapped for a symlink), and is hidden.
    """
    limit = max(1, min(limit, MAX_LIMIT))
    offset = max(1, offset)
    shown = target.shown
    try:
        handle = open_text_source(policy, target)
    except FileNotFoundError:
        raise not_found(shown, target.host, policy) from None
    except IsADirectoryError:
        advice = f"List it with search_files(target='files', path='{shown}')."
        raise ToolInputError(f"{shown} is a directory. {advice}") from None
    except PermissionError:
        raise ToolInputError(f"Permission denied reading {shown}.") from None
    except OSError as exc:
        raise ToolInputError(f"Cannot read {shown}: {exc.strerror or exc}.") from exc
    with handle:
        size = os.fstat(handle.fileno()).st_size
        if size > MAX_FILE_BYTES:
            raise ToolInputError(
                f"{shown} is {size / 1024 / 1024:.0f} MB, too large for read_file (limit "
                f"{MAX_FILE_BYTES // 1024 // 1024} MB). Find the relevant lines with search_files, or use "
                "the terminal (head, tail, sed -n 'A,Bp')."
            )
        try:
            if looks_binary(handle.read(BINARY_SNIFF_BYTES)):
                raise ToolInputError(
                    f"{shown} looks like a binary file ({size:,} bytes); read_file reads text only. "
                    "Inspect it with the terminal (file, xxd | head, strings)."
                )
            handle.seek(0)
            return _redacted(_collect(shown, handle, offset, limit, size))
        except OSError as exc:
            raise ToolInputError(f"Cannot read {shown}: {exc.strerror or exc}.") from exc


def _redacted(window: ReadWindow) -> ReadWindow:
    """The window with its secrets redacted.

    Lines are numbered before redaction, so every line shown keeps its number; a secret that spans
    lines (a private key) becomes one marker on its first line, and the lines it covered are left out.
    """
    content = redact_secrets(window.content)
    if content == window.content:
        return window
    notes = list(window.notes)
    if content.count("\n") != window.content.count("\n"):
        notes.append(
            f"Secrets are shown as {REDACTED}; a secret spanning several lines (a private key) is shown "
            "once, on its first line, and the lines it covers are left out (their numbers are skipped)."
        )
    return attrs.evolve(window, content=content, notes=tuple(notes))


def _collect(shown: str, handle: Any, offset: int, limit: int, size: int) -> ReadWindow:
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
            # Redacted before the cut: a secret cut in two would no longer look like one.
            length = len(line)
            line = f"{redact_secrets(line)[:MAX_LINE_CHARS]}... [line truncated: {length:,} chars]"
        numbered = f"{total:>6}|{line}"
        if chars + len(numbered) > MAX_OUTPUT_CHARS and out:
            stopped_at = total
            notes.append(f"Output stopped at line {total} to stay under {MAX_OUTPUT_CHARS:,} characters.")
            continue
        out.append(numbered)
        chars += len(numbered) + 1
    if total and offset > total:
        raise ToolInputError(f"offset {offset} is past the end of {shown} ({total} lines).")
    last = offset + len(out) - 1
    next_offset = last + 1 if last < total else None
    return ReadWindow(
        path=shown,
        content="\n".join(out),
        offset=offset,
        lines_returned=len(out),
        total_lines=total,
        file_size=size,
        next_offset=next_offset,
        notes=tuple(notes),
    )


async def read_file_handler(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    """Tool handler for ``read_file``: the policy's check, then a redacted window.

    Raises:
        ToolInputError: the path is refused, missing, a directory or unreadable.
    """
    offset, limit = int(args.get("offset", 1)), int(args.get("limit", DEFAULT_LIMIT))

    def read() -> ReadWindow:
        return read_window(ctx.jail.policy, read_target(ctx, args["path"]), offset, limit)

    return (await trio.to_thread.run_sync(read)).tool_result()
