"""Project context files: which one to load, how much of it, and whether it is safe (docs/DECISIONS.md#d-context-files).

Only one kind of file is loaded, the first found in this order:

1. ``.hermes.md`` / ``HERMES.md``, nearest one walking up from the working directory to the git root;
2. ``AGENTS.md`` / ``agents.md`` in the working directory;
3. ``CLAUDE.md`` / ``claude.md`` in the working directory;
4. ``.cursorrules`` and ``.cursor/rules/*.mdc`` in the working directory.

Each file is cut to 20,000 characters (the first 70 % and the last 20 % with a marker between) and
scanned for prompt-injection patterns and invisible characters; a file that trips the scan is replaced
by a ``[BLOCKED: ...]`` line. These functions block on the file system: call them from a worker thread.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import attrs

from tools.threats import find_threats

MAX_CONTEXT_FILE_CHARS = 20_000
HEAD_RATIO = 0.7
TAIL_RATIO = 0.2

HERMES_NAMES = (".hermes.md", "HERMES.md")
AGENTS_NAMES = ("AGENTS.md", "agents.md")
CLAUDE_NAMES = ("CLAUDE.md", "claude.md")

ThreatScanner = Callable[[str], list[str]]

# Between two loaded files of the same kind (several ``.cursor/rules/*.mdc``).
CONTEXT_FILES_HEADER_SEPARATOR = "\n\n"


@attrs.frozen
class ContextFile:
    """One loaded context file, as it goes into the prompt."""

    # The name shown to the model: relative to the working directory where possible.
    name: str
    path: Path
    content: str
    truncated: bool = False
    # Names of the threat patterns found; non-empty means ``content`` is the BLOCKED line.
    threats: tuple[str, ...] = ()

    @property
    def blocked(self) -> bool:
        """Whether the file was withheld because it looked like a prompt injection."""
        return bool(self.threats)


def blocked_line(name: str, threats: list[str] | tuple[str, ...]) -> str:
    """The text that replaces a file the threat scan rejected."""
    return f"[BLOCKED: {name} contained potential prompt injection ({', '.join(threats)})]"


def truncate_middle(text: str, name: str, limit: int = MAX_CONTEXT_FILE_CHARS) -> tuple[str, bool]:
    """Cut ``text`` to at most ``limit`` characters, keeping its head (70 %) and tail (20 %) around a marker.

    Returns:
        The text and whether it was cut.
    """
    if len(text) <= limit:
        return text, False
    head = text[: int(limit * HEAD_RATIO)]
    tail = text[len(text) - int(limit * TAIL_RATIO) :]
    marker = f"\n\n[... {name} truncated: {len(text) - len(head) - len(tail):,} of {len(text):,} characters omitted ...]\n\n"
    return head + marker + tail, True


def load_context_file(path: Path, name: str, *, scan: ThreatScanner = find_threats) -> ContextFile:
    """Read, scan and cap one file (undecodable bytes are replaced, never fatal)."""
    raw = path.read_text(encoding="utf-8", errors="replace")
    threats = tuple(scan(raw))
    if threats:
        return ContextFile(name=name, path=path, content=blocked_line(name, threats), threats=threats)
    content, truncated = truncate_middle(raw, name)
    return ContextFile(name=name, path=path, content=content, truncated=truncated)


def find_git_root(start: Path) -> Path | None:
    """The nearest directory at or above ``start`` that holds ``.git`` (a directory or a worktree file)."""
    directory = os.fspath(start)
    while True:
        if os.path.exists(os.path.join(directory, ".git")):
            return Path(directory)
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


# Every new session looks for its context files in a worker thread: the lookups below use strings and
# os.path, a third of what the same stat calls cost through pathlib.
def _first_existing(directory: str, names: tuple[str, ...]) -> Path | None:
    for name in names:
        candidate = os.path.join(directory, name)
        if os.path.isfile(candidate):
            return Path(candidate)
    return None


def _up_to(directory: str, root: str) -> list[str]:
    """``directory`` and each of its parents up to ``root`` (one of them), nearest first."""
    walk = [directory]
    while directory != root:
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
        walk.append(directory)
    return walk


def discover_context_files(cwd: Path) -> list[Path]:
    """The files of the highest-priority kind present for ``cwd`` (empty when none)."""
    here = os.fspath(cwd)
    root = find_git_root(cwd)
    for directory in [here] if root is None else _up_to(here, os.fspath(root)):
        found = _first_existing(directory, HERMES_NAMES)
        if found is not None:
            return [found]
    for names in (AGENTS_NAMES, CLAUDE_NAMES):
        found = _first_existing(here, names)
        if found is not None:
            return [found]
    cursor = [cwd / ".cursorrules"] if os.path.isfile(os.path.join(here, ".cursorrules")) else []
    rules_dir = cwd / ".cursor" / "rules"
    if os.path.isdir(rules_dir):
        cursor.extend(sorted(p for p in rules_dir.glob("*.mdc") if p.is_file()))
    return cursor


def _display_name(path: Path, cwd: Path) -> str:
    try:
        return str(path.relative_to(cwd))
    except ValueError:
        return str(path)


def load_context_files(cwd: Path, *, scan: ThreatScanner = find_threats) -> list[ContextFile]:
    """Discover and load the context files for ``cwd`` (blocking; run in a thread)."""
    cwd = cwd.resolve()
    return [load_context_file(path, _display_name(path, cwd), scan=scan) for path in discover_context_files(cwd)]
