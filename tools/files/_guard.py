"""The session's sandbox policy, applied to the in-process file tools.

A path the model gives is resolved as a jailed process would see it (relative to the shell's cwd,
``~`` expanded, ``/tmp`` being the session's private temp directory), every symlink and ``..``
resolved, and checked with the policy before anything is opened. A process of the session could
swap a checked path for a symlink in between, so what was really opened is checked again through
``/proc/self/fd`` before a byte is read or written.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from typing import TYPE_CHECKING, BinaryIO

import attrs

from tools.errors import ToolInputError
from tools.files._paths import resolve_path
from tools.jail.policy import JailPolicy, PathRefused

if TYPE_CHECKING:
    from tools.context import ToolContext

__all__ = [
    "Target",
    "check_opened",
    "open_checked",
    "open_text_source",
    "opened_path",
    "parent_check",
    "read_target",
    "write_target",
]


@attrs.frozen
class Target:
    """A checked file-tool path.

    Attributes:
        shown: The absolute path as the model (and a jailed process) sees it; results name this one.
        host: The resolved host path that the tool opens.
        writable: Whether it was checked for writing.
    """

    shown: str
    host: str
    writable: bool


def read_target(ctx: ToolContext, raw: str) -> Target:
    """The checked target of a read of ``raw`` (blocking: resolving touches the file system).

    Raises:
        PathRefused: the policy hides the path.
    """
    shown = str(resolve_path(ctx.shell.cwd, raw))
    return Target(shown, ctx.jail.policy.check_read(shown), writable=False)


def write_target(ctx: ToolContext, raw: str) -> Target:
    """The checked target of a write of ``raw`` (blocking).

    Raises:
        PathRefused: the policy hides the path or does not let tools write it.
    """
    shown = str(resolve_path(ctx.shell.cwd, raw))
    return Target(shown, ctx.jail.policy.check_write(shown), writable=True)


def opened_path(fd: int) -> str | None:
    """Where the open file (or directory) ``fd`` really is, None where ``/proc`` cannot tell."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None


def check_opened(policy: JailPolicy, fd: int, target: Target) -> None:
    """Check again, by where ``fd`` really is, that ``target`` may be read (or written).

    Raises:
        PathRefused: the file opened is not the one checked, and the policy refuses it.
    """
    real = opened_path(fd)
    if real is None or real == target.host:
        return
    if target.writable:
        policy.check_write_resolved(real, target.shown)
    else:
        policy.check_read_resolved(real, target.shown)


def parent_check(policy: JailPolicy, target: Target) -> Callable[[int], None]:
    """A check, for :func:`tools.files.atomic_write`, that the opened parent directory of ``target`` may be written."""
    parent = Target(os.path.dirname(target.shown), os.path.dirname(target.host), writable=True)
    return lambda dir_fd: check_opened(policy, dir_fd, parent)


def open_checked(policy: JailPolicy, target: Target, flags: int) -> int:
    """Open ``target.host`` with ``flags`` and check what was opened; the caller closes the fd.

    Raises:
        PathRefused: what was opened is refused by the policy (it was swapped after the check).
        OSError: the open failed.
    """
    fd = os.open(target.host, flags | os.O_CLOEXEC)
    try:
        check_opened(policy, fd, target)
    except PathRefused:
        os.close(fd)
        raise
    return fd


def open_text_source(policy: JailPolicy, target: Target) -> BinaryIO:
    """Open a checked regular file for reading (blocking); the caller closes it.

    Opened non-blocking, so that a FIFO is refused at once instead of hanging the tool.

    Raises:
        IsADirectoryError: the target is a directory (each tool words its own advice).
        ToolInputError: the target is a FIFO, socket or device.
        PathRefused: what was opened is refused by the policy.
        OSError: the open failed.
    """
    fd = open_checked(policy, target, os.O_RDONLY | os.O_NONBLOCK)
    mode = os.fstat(fd).st_mode
    if stat.S_ISREG(mode):
        return os.fdopen(fd, "rb")
    os.close(fd)
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), target.shown)
    raise ToolInputError(f"{target.shown} is not a regular file (a FIFO, socket or device); give a text file's path.")
