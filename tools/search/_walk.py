"""The Python search engine: a walk of the tree in a worker thread, used where ripgrep is missing.

It skips what ripgrep skips (``.git``, hidden entries, binary files, well-known dependency and build
directories), lists entries in path order as ``rg --sort path`` does, and never follows a symlink:
every directory and file is read through a descriptor whose inode must be the one listed, so a path
swapped for a symlink mid-walk leads nowhere. Lines are shown redacted, each judged with the lines
around it (:mod:`tools.redact_lines`): a private key's body is redacted even where its ``BEGIN``
line is not among the lines shown.
"""

from __future__ import annotations

import collections
import fnmatch
import itertools
import os
import re
import stat
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Final

from tools.errors import ToolInputError
from tools.jail.policy import JailPolicy
from tools.redact_lines import RedactedLine, RedactedLines
from tools.search._collect import Collector, OutputMode, SearchResult, Target

__all__ = ["DEFAULT_LIMIT", "IGNORED_DIRS", "check_root", "file_lines", "name_matches", "search_with_python"]

DEFAULT_LIMIT: Final = 50
_SNIFF_BYTES: Final = 8_192
_WHOLE_FILE_BYTES: Final = 16 * 1024 * 1024

IGNORED_DIRS: Final = frozenset(
    {
        ".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox",
        ".mypy_cache", ".pytest_cache", ".ruff_cache", ".cache", "dist", "build", "target",
    }
)
"""Directory names never searched: VCS data, dependencies, caches and build output."""


def name_matches(rel: str, glob: str) -> bool:
    """Whether ``rel`` matches ``glob``: the relative path for a glob with a slash, else the name (as ``rg -g``)."""
    return fnmatch.fnmatchcase(rel if "/" in glob else rel.rsplit("/", 1)[-1], glob)


def check_root(root: Path) -> bool:
    """Whether the search root is a directory (False: a file).

    Raises:
        ToolInputError: it does not exist.
    """
    if not root.exists():
        raise ToolInputError(f"Path not found: {root}. Check the path (relative paths start at the working directory).")
    return root.is_dir()


_Entry = tuple[str, Path, int]
"""``(relative path, path, inode)`` of an entry of the walk; a directory's relative path ends in ``/``."""


def _walk(root: Path, stop: threading.Event, excluded: frozenset[str]) -> Iterator[_Entry]:
    """Yield ``(relative path, path, inode)`` of searchable files under ``root``, in name order, depth first.

    Entries whose path is in ``excluded`` are never entered nor listed; symlinks are never followed.
    """
    if root.is_file():
        yield root.name, root, root.stat().st_ino
        return
    stack: list[_Entry] = [("", root, root.stat().st_ino)]
    while stack and not stop.is_set():
        prefix, directory, inode = stack.pop()
        try:
            entries = _scan(directory, inode)
        except OSError:
            continue
        # Reverse-sorted onto a stack: popped in name order, a directory's files before later siblings.
        pending: list[_Entry] = []
        for name, is_dir, entry_inode in sorted(entries, reverse=True):
            path = directory / name
            if name.startswith(".") or str(path) in excluded or (is_dir and name in IGNORED_DIRS):
                continue
            pending.append((f"{prefix}{name}/" if is_dir else f"{prefix}{name}", path, entry_inode))
        stack.extend(pending)
        while stack and not stack[-1][0].endswith("/") and not stop.is_set():
            yield stack.pop()


def _scan(directory: Path, inode: int) -> list[tuple[str, bool, int]]:
    """``(name, is a directory, inode)`` of the directories and regular files in ``directory``.

    Read through a descriptor whose inode is checked first: a directory swapped for another (or for
    a symlink to one) during the walk is not listed.
    """
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        if os.fstat(fd).st_ino != inode:
            return []
        with os.scandir(fd) as listing:
            return [
                (entry.name, entry.is_dir(follow_symlinks=False), entry.inode())
                for entry in listing
                if entry.is_dir(follow_symlinks=False) or entry.is_file(follow_symlinks=False)
            ]
    finally:
        os.close(fd)


def file_lines(path: Path, inode: int | None = None, prefilter: re.Pattern[str] | None = None) -> Iterator[str]:
    """The lines of a text file (without their ``\\n``); nothing for a binary or unreadable file, for one
    that is not a regular file or is a symlink, for one that is no longer the one listed (``inode``:
    swapped during the walk), or for one the prefilter says cannot match."""
    try:
        # No symlink followed; a FIFO swapped in does not block the open (and is then skipped).
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return
    with os.fdopen(fd, "rb") as handle:
        try:
            status = os.fstat(fd)
            if not stat.S_ISREG(status.st_mode) or (inode is not None and status.st_ino != inode):
                return
            head = handle.read(_SNIFF_BYTES)
            if b"\x00" in head:
                return
            if status.st_size <= _WHOLE_FILE_BYTES:
                text = (head + handle.read()).decode("utf-8", errors="replace")
                if prefilter is not None and not prefilter.search(text):
                    return
                lines = text.split("\n")
                if lines[-1] == "":
                    lines.pop()  # the piece after a final newline is not a line
                yield from lines
            else:
                # Too big to hold at once: stream it line by line.
                handle.seek(0)
                yield from (raw.decode("utf-8", errors="replace").rstrip("\n") for raw in handle)
        except OSError:
            return


def _hits(lines: Iterable[RedactedLine], regex: re.Pattern[str], context: int) -> Iterator[tuple[int, str, bool]]:
    """``(line number, line as shown, is context)`` of matching lines and the ``context`` lines around them.

    A line is given once, however many matches it is near, and a matching line is never context:
    ripgrep's ``-C`` does the same.
    """
    before: collections.deque[tuple[int, str]] = collections.deque(maxlen=context)
    after = 0
    for number, text, shown in lines:
        if regex.search(text):
            yield from ((n, line, True) for n, line in before)
            before.clear()
            yield number, shown, False
            after = context
        elif after:
            yield number, shown, True
            after -= 1
        elif context:
            before.append((number, shown))


def search_with_python(
    root: Path,
    pattern: str,
    target: Target = "content",
    file_glob: str | None = None,
    limit: int = DEFAULT_LIMIT,
    shown_root: str = ".",
    stop: threading.Event | None = None,
    policy: JailPolicy | None = None,
    *,
    offset: int = 0,
    output_mode: OutputMode = "content",
    context: int = 0,
) -> SearchResult:
    """Search with a Python walk (blocking; run in a thread).

    Args:
        root: resolved directory or file to search.
        shown_root: how ``root`` is written in results (the path the model gave).
        stop: set it to make the walk end early (on cancellation).
        policy: the session's policy: the paths it hides under ``root`` are left out of the walk.
        offset / output_mode / context: as the tool's arguments (see :class:`Collector`).

    Raises:
        ToolInputError: missing root or invalid regex.
    """
    if not check_root(root):
        # A single file: results name it as given, so display relative to its directory.
        shown_root = os.path.dirname(shown_root) or "."
    stop = stop or threading.Event()
    excluded = frozenset(policy.hidden_within(str(root))) if policy is not None else frozenset()
    collector = Collector(target, output_mode, offset, limit, shown_root)
    if target == "files":
        for rel, path, _ in _walk(root, stop, excluded):
            if name_matches(rel, pattern) and (file_glob is None or name_matches(rel, file_glob)):
                if collector.add_name(rel, str(path)):
                    break
        return collector.result("python")
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        raise ToolInputError(
            f"Invalid regex {pattern!r}: {exc}. Escape special characters such as ( [ . * with a backslash."
        ) from None
    # Whole-file prefilter: most files do not match, and one search per file is far cheaper
    # than one per line.  MULTILINE keeps ^ and $ meaning "line start/end" as in the per-line pass.
    prefilter = None if ("\\A" in pattern or "\\Z" in pattern) else re.compile(pattern, re.MULTILINE)
    context = context if output_mode == "content" else 0
    for rel, path, inode in _walk(root, stop, excluded):
        if file_glob is not None and not name_matches(rel, file_glob):
            continue
        lines = file_lines(path, inode, prefilter)
        # Lines are judged with the lines around them only where they are shown (``tee``: the text as shown).
        judged = RedactedLines(lines) if output_mode == "content" else zip(itertools.count(1), *itertools.tee(lines))
        for number, line, is_context in _hits(judged, regex, context):
            if collector.add_line(rel, number, line, context=is_context):
                return collector.result("python")
    return collector.result("python")
