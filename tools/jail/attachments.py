"""Files a reply asks to attach (``MEDIA:/path``), judged by the session's own sandbox policy.

A platform sends a file only when the session's tools could read it: the reply is model output, and a
path in it is hostile input like any tool argument. Blocking (it resolves symlinks): run in a thread.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable

from messages.session import FileCheck
from tools.jail.policy import JailPolicy, PathRefused

__all__ = ["check_files"]


def check_files(policy: JailPolicy, paths: Iterable[str]) -> list[FileCheck]:
    """A :class:`FileCheck` per path: its host path when the policy lets tools read it and it is a
    non-empty regular file, else the refusal."""
    return [_check(policy, path) for path in paths]


def _check(policy: JailPolicy, path: str) -> FileCheck:
    if not os.path.isabs(path):
        return FileCheck(path, refusal="an attachment must be an absolute path")
    try:
        host = policy.check_read(path)
        info = os.stat(host)
    except PathRefused as exc:
        return FileCheck(path, refusal=str(exc))
    except OSError as exc:
        return FileCheck(path, refusal=f"cannot be read ({exc.strerror or type(exc).__name__})")
    if not stat.S_ISREG(info.st_mode):
        return FileCheck(path, refusal="not a regular file")
    if info.st_size == 0:
        return FileCheck(path, refusal="empty")
    return FileCheck(path, host_path=host)
