"""``write_file`` and ``patch``: atomic edits of text files."""

from __future__ import annotations

import difflib
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import trio

from tools.errors import ToolInputError
from tools.files._guard import Target, open_text_source, parent_check, write_target
from tools.files._markers import MarkerOverSecret, check_no_marker_over_secret, hidden_secrets
from tools.files._paths import BINARY_SNIFF_BYTES, looks_binary, not_found
from tools.jail.policy import JailPolicy
from tools.redact import REDACTED, redact_secrets
from tools.results import ToolResult

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


def atomic_write(
    path: Path, data: bytes, *, new_file_mode: int = 0o666, check_dir: Callable[[int], None] | None = None
) -> bool:
    """Write ``data`` to ``path`` through a temp file and a rename; returns True if created.

    Blocking: run in a thread.  Parents are created; an existing file keeps its mode, a new one gets
    ``new_file_mode`` filtered by the umask.  Every step after opening the parent directory is relative
    to it, so the file written is in the directory that ``check_dir`` (given the directory's fd)
    accepted, whatever is renamed or symlinked meanwhile.  With ``check_dir``, ``path`` must be
    resolved: its parents are opened (and created) one by one without following any symlink, so a
    directory swapped for a symlink cannot make the write create directories elsewhere.
    """
    if check_dir is None:
        path.parent.mkdir(parents=True, exist_ok=True)
        dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    else:
        dir_fd = _open_dirs_no_follow(path.parent)
    try:
        if check_dir is not None:
            check_dir(dir_fd)
        return _replace_in(dir_fd, path.name, data, new_file_mode)
    finally:
        os.close(dir_fd)


def _open_dirs_no_follow(directory: Path) -> int:
    """Open the absolute, resolved ``directory``, creating what is missing, never following a symlink."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open("/", flags)
    try:
        for part in directory.parts[1:]:
            try:
                os.mkdir(part, dir_fd=fd)
            except FileExistsError:
                pass
            parent, fd = fd, -1
            try:
                fd = os.open(part, flags, dir_fd=parent)
            finally:
                os.close(parent)
    except BaseException:
        if fd != -1:
            os.close(fd)
        raise
    return fd


def _replace_in(dir_fd: int, name: str, data: bytes, new_file_mode: int) -> bool:
    try:
        mode: int | None = os.stat(name, dir_fd=dir_fd).st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    tmp = f".{name[:64]}.{secrets.token_hex(6)}.tmp"
    # Creating with the final mode lets the umask apply, as for any other new file.
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    fd = os.open(tmp, flags, new_file_mode if mode is None else 0o600, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode, dir_fd=dir_fd)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        os.unlink(tmp, dir_fd=dir_fd)
        raise
    return mode is None


def _read_text(policy: JailPolicy, target: Target) -> str | None:
    """The current text of a checked target, None when there is no such file."""
    try:
        with open_text_source(policy, target) as handle:
            return handle.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return None


def _write(policy: JailPolicy, target: Target, content: str) -> dict[str, Any]:
    shown = target.shown
    data = content.encode("utf-8")
    try:
        if os.path.isdir(target.host):
            raise ToolInputError(f"{shown} is a directory; give a file path.")
        if REDACTED in content:
            old = _read_text(policy, target)
            if old is not None:
                check_no_marker_over_secret(old, content, shown)
        created = atomic_write(Path(target.host), data, check_dir=parent_check(policy, target))
    except PermissionError:
        raise ToolInputError(f"Permission denied writing {shown}.") from None
    except OSError as exc:
        raise ToolInputError(f"Cannot write {shown}: {exc.strerror or exc}.") from exc
    return {"path": shown, "bytes_written": len(data), "created": created}


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


def patch_file(policy: JailPolicy, target: Target, old: str, new: str, replace_all: bool = False) -> dict[str, Any]:
    """Replace ``old`` by ``new`` in a checked target (blocking; run in a thread) and return the diff.

    Raises:
        ToolInputError: missing/binary file, empty or identical strings, no match, an ambiguous match
            without ``replace_all`` (with candidate line numbers), or a secret the edit would overwrite
            with the redaction marker.
    """
    shown = target.shown
    if old == "":
        raise ToolInputError("old_string is empty. To create or overwrite a whole file use write_file.")
    if old == new:
        raise ToolInputError("old_string and new_string are identical; there is nothing to change.")
    try:
        with open_text_source(policy, target) as handle:
            raw = handle.read()
    except FileNotFoundError:
        raise not_found(shown, target.host, policy, " Use write_file to create a new file.") from None
    except IsADirectoryError:
        raise ToolInputError(f"{shown} is a directory; give a file path.") from None
    except OSError as exc:
        raise ToolInputError(f"Cannot read {shown}: {exc.strerror or exc}.") from exc
    if looks_binary(raw[:BINARY_SNIFF_BYTES]):
        raise ToolInputError(f"{shown} looks like a binary file; patch edits text files only.")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolInputError(f"{shown} is not valid UTF-8; patch cannot edit it safely.") from None
    found = _occurrence_lines(text, old)
    if not found:
        raise _no_match(text, old, shown)
    if len(found) > 1 and not replace_all:
        raise ToolInputError(
            f"old_string occurs {len(found)} times in {shown} (lines {', '.join(map(str, found[:_MAX_CANDIDATES]))}"
            f"{', ...' if len(found) > _MAX_CANDIDATES else ''}). Include more surrounding lines to make it "
            "unique, or pass replace_all=true to change every occurrence."
        )
    updated = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    check_no_marker_over_secret(text, updated, shown)
    try:
        atomic_write(Path(target.host), updated.encode("utf-8"), check_dir=parent_check(policy, target))
    except OSError as exc:
        raise ToolInputError(f"Cannot write {shown}: {exc.strerror or exc}.") from exc
    name = os.path.basename(shown)
    diff = "".join(
        difflib.unified_diff(
            text.splitlines(keepends=True),
            updated.splitlines(keepends=True),
            fromfile=f"a/{name}",
            tofile=f"b/{name}",
        )
    )
    # The diff's context lines may hold a secret of the file: redacted, before the cut as in read_file.
    diff = redact_secrets(diff)
    if len(diff) > _MAX_DIFF_CHARS:
        diff = diff[:_MAX_DIFF_CHARS] + f"\n[... diff cut: {len(diff) - _MAX_DIFF_CHARS:,} more characters]"
    return {"path": shown, "replacements": len(found) if replace_all else 1, "diff": diff}


def _no_match(text: str, old: str, shown: str) -> ToolInputError:
    """The error for an ``old_string`` that is not in the file, saying where it probably was."""
    if REDACTED in old and hidden_secrets(text):
        return MarkerOverSecret(
            f"old_string was not found in {shown}: it contains {REDACTED}, which stands for a secret you "
            "were not shown, so it never matches the file. Edit around the secret: choose an old_string "
            f"without the {REDACTED} part (the text before or after it), or ask the user to change the secret."
        )
    candidates = _candidates(text, old)
    where = (
        f" Similar text at line(s) {', '.join(map(str, candidates))}; read those lines with read_file "
        "and copy them exactly (whitespace and indentation included)."
        if candidates
        else " Read the file with read_file and copy the text exactly."
    )
    return ToolInputError(f"old_string was not found in {shown}.{where}")


async def write_file_handler(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    """Tool handler for ``write_file``: the policy's check, then an atomic write.

    Raises:
        ToolInputError: the path is refused, a directory or not writable.
    """

    def write() -> dict[str, Any]:
        return _write(ctx.jail.policy, write_target(ctx, args["path"]), args["content"])

    return ToolResult(await trio.to_thread.run_sync(write))


async def patch_handler(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    """Tool handler for ``patch``: the policy's check, then an exact replacement.

    Raises:
        ToolInputError: see :func:`patch_file`.
    """
    old, new, replace_all = args["old_string"], args["new_string"], bool(args.get("replace_all", False))

    def patch() -> dict[str, Any]:
        return patch_file(ctx.jail.policy, write_target(ctx, args["path"]), old, new, replace_all)

    return ToolResult(await trio.to_thread.run_sync(patch))
