"""``read_file``: a window of a text file (or of a document's text) with line numbers.

As in Hermes Agent, each line is shown as ``N|text``, and a read of a window the model has already
been given, of a file that has not changed since, returns a short "unchanged" answer instead of the
content. The third identical read in a row (no other tool called in between) carries a warning and
the fourth is refused: a model in a read loop. The counts live in the session's read ledger
(``ctx.file_reads``); a write of the file and a compression of the conversation reset them.
"""

from __future__ import annotations

import functools
import itertools
import os
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, BinaryIO, Final

import attrs
import trio

from tools._secret_rules import secret_spans
from tools.errors import ToolInputError
from tools.files._extract import DocumentError, extract_document, is_document
from tools.files._guard import Target, open_text_source, read_target
from tools.files._paths import BINARY_SNIFF_BYTES, looks_binary, not_found
from tools.jail.policy import JailPolicy
from tools.redact import REDACTED, redact_secrets
from tools.redact_lines import RedactedLines
from tools.results import ToolResult

if TYPE_CHECKING:
    from tools.context import ToolContext

__all__ = ["MAX_FILE_BYTES", "MAX_LIMIT", "READ_FILE_SCHEMA", "ReadWindow", "read_file_handler", "read_window"]

DEFAULT_LIMIT: Final = 500
MAX_LIMIT: Final = 2_000
MAX_LINE_CHARS: Final = 2_000
MAX_OUTPUT_CHARS: Final = 100_000
MAX_FILE_BYTES: Final = 100 * 1024 * 1024
_DECODE_CHUNK_BYTES: Final = 64 * 1024

READ_FILE_SCHEMA: Final[dict[str, Any]] = {
    "name": "read_file",
    "description": (
        "Read a text file a window at a time, each line shown as 'LINE_NUM|CONTENT'; use it instead of cat, "
        "head or tail in the terminal. Paths are relative to "
        "the session's working directory. Use offset/limit to page through long files; the result tells the "
        "total line count and the next offset. Word (.docx), Excel (.xlsx) and Jupyter (.ipynb) files are "
        "rendered as text. Reading the same unchanged window again returns a short 'unchanged' answer: use "
        "the content you already have. Binary files are refused."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Path of the file to read."},
            "offset": {"type": "integer", "description": "First line to return (1-based).", "minimum": 1, "default": 1},
            "limit": {
                "type": "integer",
                "description": "Maximum number of lines to return (at most 2,000).",
                "maximum": MAX_LIMIT,
                "default": DEFAULT_LIMIT,
            },
        },
        "required": ["path"],
    },
}

UNCHANGED_MESSAGE: Final = (
    "This window of the file has not changed since you last read it: the content in your earlier "
    "read_file result is still current, so use that instead of reading it again."
)
WARN_AT: Final = 3
"""The identical read (of an unchanged window) that carries a warning; the one after it is refused."""


@attrs.frozen
class ReadWindow:
    """What ``read_window`` found: numbered lines plus totals.

    ``host`` and ``mtime_ns`` identify the file version that was read (for the session's read ledger);
    they are not shown to the model.
    """

    path: str
    content: str
    offset: int
    lines_returned: int
    total_lines: int
    file_size: int
    next_offset: int | None
    notes: tuple[str, ...] = ()
    extracted_from: str | None = None
    host: str = attrs.field(default="", repr=False)
    mtime_ns: int = attrs.field(default=0, repr=False)

    def tool_result(self) -> ToolResult:
        """The tool result."""
        data: dict[str, Any] = attrs.asdict(self, filter=lambda a, _: a.name not in ("host", "mtime_ns"))
        data["notes"] = list(self.notes)
        for key in ("notes", "next_offset", "extracted_from"):
            if not data[key]:
                del data[key]
        return ToolResult(data)


def read_window(policy: JailPolicy, target: Target, offset: int = 1, limit: int = DEFAULT_LIMIT) -> ReadWindow:
    """Read lines ``offset`` .. ``offset + limit - 1`` of a checked target (blocking; run in a thread).

    A Word, Excel or Jupyter document is read as the text extracted from it. The numbered lines are
    redacted: a secret in the file reaches the model as ``[REDACTED]``, a line of a private key too,
    whichever of the key's lines the window starts or ends on.

    Raises:
        ToolInputError: missing file, directory, binary, oversized or malformed file, offset past the end.
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
        status = os.fstat(handle.fileno())
        size = status.st_size
        try:
            if is_document(target.host):
                window = _document_window(shown, handle, size, offset, limit)
            else:
                window = _text_window(shown, handle, size, offset, limit)
        except OSError as exc:
            raise ToolInputError(f"Cannot read {shown}: {exc.strerror or exc}.") from exc
    return attrs.evolve(window, host=target.host, mtime_ns=status.st_mtime_ns)


def _text_window(shown: str, handle: BinaryIO, size: int, offset: int, limit: int) -> ReadWindow:
    if size > MAX_FILE_BYTES:
        raise ToolInputError(
            f"{shown} is {size / 1024 / 1024:.0f} MB, too large for read_file (limit "
            f"{MAX_FILE_BYTES // 1024 // 1024} MB). Find the relevant lines with search_files, or use "
            "the terminal (head, tail, sed -n 'A,Bp')."
        )
    if looks_binary(handle.read(BINARY_SNIFF_BYTES)):
        raise ToolInputError(
            f"{shown} looks like a binary file ({size:,} bytes); read_file reads text only. "
            "Inspect it with the terminal (file, xxd | head, strings)."
        )
    handle.seek(0)
    return _collect(shown, _text_lines(handle), offset, limit, size)


def _text_lines(handle: BinaryIO) -> Iterator[str]:
    """The lines of a text file, without their ``\\n``, decoded lazily.

    Decoded and split some 64 KiB of whole lines at a time: a line at a time, decoding (and counting)
    the lines of a 100 MB file around a window took twice as long.
    """
    chunks = iter(functools.partial(handle.readlines, _DECODE_CHUNK_BYTES), [])
    return itertools.chain.from_iterable(
        b"".join(chunk).decode("utf-8", errors="replace").removesuffix("\n").split("\n") for chunk in chunks
    )


def _document_window(shown: str, handle: BinaryIO, size: int, offset: int, limit: int) -> ReadWindow:
    try:
        document = extract_document(shown, handle, size)
    except DocumentError as exc:
        raise ToolInputError(
            f"Cannot extract the text of {shown}: {exc}. Inspect it with the terminal instead."
        ) from None
    window = _collect(shown, document.text.split("\n"), offset, limit, size)
    return attrs.evolve(window, notes=document.notes + window.notes, extracted_from=document.kind)


def _collect(shown: str, lines: Iterable[str], offset: int, limit: int, size: int) -> ReadWindow:
    """The window of ``lines`` (a text's lines without their ``\\n``), numbered and redacted, with the totals.

    Each line of the window is judged with the text around it (:class:`~tools.redact_lines.RedactedLines`),
    so a line of a private key is redacted though the window holds neither its ``BEGIN`` nor its ``END``
    line; the lines before the window are only counted, so memory stays bounded whatever the text's length.
    """
    window: list[tuple[int, str, str]] = []
    chars = 0
    notes: list[str] = []
    judged = RedactedLines(lines, first=offset)
    for number, raw, seen in itertools.islice(judged, limit):
        text, seen = _cut(raw.rstrip("\r")), _cut(seen.rstrip("\r"))
        # Hermes's compact gutter: the number and a bar, no padding (padding costs tokens, tells nothing).
        size_shown = len(str(number)) + 1 + len(seen)
        if chars + size_shown > MAX_OUTPUT_CHARS and window:
            notes.append(f"Output stopped at line {number} to stay under {MAX_OUTPUT_CHARS:,} characters.")
            break
        window.append((number, text, seen))
        chars += size_shown + 1
    total = judged.line_count()
    if total and offset > total:
        raise ToolInputError(f"offset {offset} is past the end of {shown} ({total} lines).")
    content, left_out = _numbered(window)
    if left_out:
        notes.append(
            f"Secrets are shown as {REDACTED}; a secret spanning several lines (a private key) is shown "
            "once, on its first line, and the lines it covers are left out (their numbers are skipped)."
        )
    last = offset + len(window) - 1
    return ReadWindow(
        path=shown,
        content=content,
        offset=offset,
        lines_returned=len(window),
        total_lines=total,
        file_size=size,
        next_offset=last + 1 if last < total else None,
        notes=tuple(notes),
    )


def _cut(line: str) -> str:
    """``line`` cut to MAX_LINE_CHARS, redacted before the cut (a secret cut in two would no longer look like one)."""
    if len(line) <= MAX_LINE_CHARS:
        return line
    return f"{redact_secrets(line)[:MAX_LINE_CHARS]}... [line truncated: {len(line):,} chars]"


def _numbered(window: list[tuple[int, str, str]]) -> tuple[str, bool]:
    """The window's ``(number, text as read, text as judged)`` lines shown as ``N|text`` and redacted; and
    whether lines were left out.

    Each line is shown as judged with the text around it, but for a private key whose ``BEGIN`` line is in
    the window: its lines are redacted as read, numbered, which shows the key once, as the marker on its
    first line, and leaves out the lines it covers (their numbers are skipped).
    """
    as_read = "\n".join(f"{number}|{text}" for number, text, _ in window)
    # The lines of the keys that begin in the window (the secrets spanning lines in ``as_read``): kept as read.
    kept: set[int] = set()
    if any(text != seen for _, text, seen in window):
        for start, end in secret_spans(as_read):
            if as_read.find("\n", start, end) != -1:
                first = as_read.count("\n", 0, start)
                kept.update(range(first, first + as_read.count("\n", start, end) + 1))
    lines = [f"{number}|{text if index in kept else seen}" for index, (number, text, seen) in enumerate(window)]
    content = redact_secrets("\n".join(lines))
    return content, content.count("\n") != as_read.count("\n")


def _unchanged_answer(window: ReadWindow) -> ToolResult:
    """What a read of a window the model was already given, of the file as it is now, gets: a short answer."""
    return ToolResult({
        "path": window.path,
        "status": "unchanged",
        "message": UNCHANGED_MESSAGE,
        "content_returned": False,
    })


async def read_file_handler(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    """Tool handler for ``read_file``: the policy's check, then a redacted window.

    A read of a window already given, of the file as it is now, is answered short; the third identical
    read in a row (no other tool in between) is warned about and the fourth refused. The session's read
    ledger keeps the counts.

    Raises:
        ToolInputError: the path is refused, missing, a directory or unreadable; or a repeat read is refused.
    """
    offset, limit = int(args.get("offset", 1)), int(args.get("limit", DEFAULT_LIMIT))

    def read() -> ReadWindow:
        return read_window(ctx.jail.policy, read_target(ctx, args["path"]), offset, limit)

    window = await trio.to_thread.run_sync(read)
    count = ctx.file_reads.note_read(window.host, window.mtime_ns, (window.offset, max(1, min(limit, MAX_LIMIT))))
    if count.in_a_row > WARN_AT:
        raise ToolInputError(
            f"Refused: this is read number {count.in_a_row} in a row of the same unchanged window of {window.path} "
            f"(offset {window.offset}). You already have its content in this conversation; continue the task "
            "with it (edit, run, or answer) instead of reading it again."
        )
    result = _unchanged_answer(window) if count.unchanged else window.tool_result()
    if count.in_a_row == WARN_AT:
        result = ToolResult({**result.payload, "_warning": (
            f"You have read this unchanged window {count.in_a_row} times in a row. Work with what you have; "
            "one more identical read will be refused."
        )})
    return result
