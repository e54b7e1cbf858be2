"""What a snapshot of a working directory would hold, found before git reads a byte of it.

Blocking (a directory walk): run in a worker thread. Symbolic links are never followed (git stores a
link as its target's name), so a link pointing out of the working directory takes nothing from there.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import attrs

from tools.checkpoints.errors import CheckpointSkipped

__all__ = ["EXCLUDED_DIRS", "IGNORE_RULES", "ScanResult", "scan_tree"]

#: Directories never walked nor snapshotted: dependencies, build output, caches, virtualenvs, other VCS.
EXCLUDED_DIRS = frozenset({
    "node_modules", "dist", "build", "target", "out", ".next", ".nuxt", "__pycache__", ".cache",
    ".pytest_cache", ".mypy_cache", ".ruff_cache", "coverage", ".venv", "venv", "env", ".git", ".hg",
    ".svn", ".worktrees",
})

#: The shadow repository's ignore rules (its ``info/exclude``): the directories above, compiled and
#: packed files, media, secrets (``.env``), logs. The working directory's own ``.gitignore`` files apply too.
IGNORE_RULES = (
    *(f"{name}/" for name in sorted(EXCLUDED_DIRS)),
    "*.pyc", "*.pyo", ".coverage",
    "*.so", "*.dylib", "*.dll", "*.o", "*.a", "*.jar", "*.class", "*.exe", "*.obj",
    "*.mp4", "*.mov", "*.mkv", "*.webm", "*.zip", "*.tar", "*.tar.gz", "*.tgz", "*.7z", "*.rar", "*.iso",
    ".env", ".env.*",
    ".DS_Store", "Thumbs.db",
    "*.log",
)

#: Characters a gitignore pattern gives a meaning to, escaped so a file's name is matched as written.
_PATTERN_SPECIALS = frozenset("\\*?[]!# ")


@attrs.frozen
class ScanResult:
    """The working directory as a snapshot would take it.

    Attributes:
        files: the files (and links) found outside the excluded directories.
        left_out: the ignore rules (anchored, escaped) that leave out each file over the size cap and each
            repository nested in the directory.
    """

    files: int
    left_out: tuple[str, ...]


def _anchored(relative: str) -> str:
    if "\n" in relative:
        raise CheckpointSkipped(f"cannot leave out {relative!r}: its name has a newline")
    return "/" + "".join("\\" + char if char in _PATTERN_SPECIALS else char for char in relative)


def scan_tree(root: Path, *, max_files: int, max_file_bytes: int) -> ScanResult:
    """Count the files of ``root`` and find those over ``max_file_bytes`` (0: no cap) and the git
    repositories inside it.

    Raises:
        CheckpointSkipped: more than ``max_files`` files, or a path to leave out that an ignore rule
            cannot spell (it holds a newline).
    """
    files = 0
    left_out: list[str] = []
    for directory, dirnames, filenames in os.walk(root, followlinks=False):
        if directory != str(root) and ".git" in dirnames + filenames:
            # Another repository (a clone, a vendored project): git would only record its commit, and
            # fails on one with none; it is left out whole, as the user's own .git is.
            dirnames[:] = []
            left_out.append(_anchored(os.path.relpath(directory, root)) + "/")
            continue
        dirnames[:] = [name for name in dirnames if name not in EXCLUDED_DIRS]
        # A link to a directory is listed among dirnames and not walked: it is a file to git.
        names = filenames + [name for name in dirnames if os.path.islink(os.path.join(directory, name))]
        files += len(names)
        if files > max_files:
            raise CheckpointSkipped(f"{root} has more than {max_files} files")
        if not max_file_bytes:
            continue
        for name in filenames:
            path = os.path.join(directory, name)
            try:
                info = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode) and info.st_size > max_file_bytes:
                left_out.append(_anchored(os.path.relpath(path, root)))
    return ScanResult(files, tuple(left_out))
