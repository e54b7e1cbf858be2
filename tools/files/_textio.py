"""Reading a checked file for an edit, and what an edit hands back: its diff and the file's new state."""

from __future__ import annotations

import difflib
import os
import stat
from typing import Final

import attrs

from tools.errors import ToolInputError
from tools.files._guard import Target, open_text_source
from tools.files._paths import BINARY_SNIFF_BYTES, looks_binary, not_found
from tools.jail.policy import JailPolicy
from tools.redact import redact_secrets

__all__ = ["Original", "cap_diff", "read_editable", "read_loosely", "unified_diff", "uses_crlf", "written_mtime"]

_MAX_DIFF_CHARS: Final = 20_000
_LINE_ENDING_SNIFF: Final = 4_096


@attrs.frozen
class Original:
    """A text file as an edit found it: its content and permission bits (None for both: no such file)."""

    text: str | None
    mode: int | None = None


def read_editable(policy: JailPolicy, target: Target, missing_advice: str) -> Original:
    """The text of a checked file an edit will change (blocking); ``Original(None)`` when it does not exist.

    Raises:
        ToolInputError: a directory, a binary file, not UTF-8, unreadable, or missing when
            ``missing_advice`` is not empty (the advice ends the "File not found" error).
    """
    shown = target.shown
    try:
        with open_text_source(policy, target) as handle:
            mode = stat.S_IMODE(os.fstat(handle.fileno()).st_mode)
            raw = handle.read()
    except FileNotFoundError:
        if missing_advice:
            raise not_found(shown, target.host, policy, missing_advice) from None
        return Original(None)
    except IsADirectoryError:
        raise ToolInputError(f"{shown} is a directory; give a file path.") from None
    except OSError as exc:
        raise ToolInputError(f"Cannot read {shown}: {exc.strerror or exc}.") from exc
    if looks_binary(raw[:BINARY_SNIFF_BYTES]):
        raise ToolInputError(f"{shown} looks like a binary file; patch edits text files only.")
    try:
        return Original(raw.decode("utf-8"), mode)
    except UnicodeDecodeError:
        raise ToolInputError(f"{shown} is not valid UTF-8; patch cannot edit it safely.") from None


def read_loosely(policy: JailPolicy, target: Target) -> str | None:
    """The current text of a checked target, undecodable bytes replaced; None when there is no such file."""
    try:
        with open_text_source(policy, target) as handle:
            return handle.read().decode("utf-8", errors="replace")
    except (FileNotFoundError, IsADirectoryError):
        return None


def uses_crlf(policy: JailPolicy, target: Target) -> bool:
    """Whether the existing file's first lines end in CRLF (blocking; False when there is no such file)."""
    try:
        with open_text_source(policy, target) as handle:
            return b"\r\n" in handle.read(_LINE_ENDING_SNIFF)
    except (FileNotFoundError, IsADirectoryError):
        return False


def unified_diff(label: str, before: str | None, after: str | None) -> str:
    """The unified diff of one file (``label`` as the model named it; None: absent on that side), redacted.

    The diff's context lines may hold a secret of the file: redacted here, as read_file would show it.
    """
    old = [] if before is None else before.splitlines(keepends=True)
    new = [] if after is None else after.splitlines(keepends=True)
    fromfile = "/dev/null" if before is None else f"a/{label}"
    tofile = "/dev/null" if after is None else f"b/{label}"
    return redact_secrets("".join(difflib.unified_diff(old, new, fromfile=fromfile, tofile=tofile)))


def cap_diff(diff: str) -> str:
    """``diff`` cut to the size a result may carry, saying how much was cut."""
    if len(diff) <= _MAX_DIFF_CHARS:
        return diff
    return diff[:_MAX_DIFF_CHARS] + f"\n[... diff cut: {len(diff) - _MAX_DIFF_CHARS:,} more characters]"


def written_mtime(target: Target) -> int | None:
    """The modification time of a file just written (for the ledger), None when it cannot be read."""
    try:
        return os.stat(target.host).st_mtime_ns
    except OSError:
        return None
