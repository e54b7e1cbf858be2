"""Atomic file replacement: a temp file in the same directory, fsynced, then renamed over the target."""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from pathlib import Path

__all__ = ["atomic_write", "open_dirs_no_follow", "remove_in_checked_dir"]


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
        dir_fd = open_dirs_no_follow(path.parent)
    try:
        if check_dir is not None:
            check_dir(dir_fd)
        return _replace_in(dir_fd, path.name, data, new_file_mode)
    finally:
        os.close(dir_fd)


def open_dirs_no_follow(directory: Path, *, create: bool = True) -> int:
    """Open the absolute, resolved ``directory``, creating what is missing (with ``create``), never following a symlink."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open("/", flags)
    try:
        for part in directory.parts[1:]:
            if create:
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


def remove_in_checked_dir(path: Path, check_dir: Callable[[int], None]) -> None:
    """Delete the file ``path`` (resolved) from its parent, opened without following symlinks and checked.

    Blocking: run in a thread. The parent must exist; it is not created.

    Raises:
        FileNotFoundError: there is no such file (or parent).
        IsADirectoryError: ``path`` is a directory.
    """
    fd = open_dirs_no_follow(path.parent, create=False)
    try:
        check_dir(fd)
        os.unlink(path.name, dir_fd=fd)
    finally:
        os.close(fd)
