"""Resolve a path as a jailed process would, component by component, and say where it is on the host.

``os.path.realpath`` resolves on the host: an absolute symlink target such as ``/tmp/x`` would land
in the host's ``/tmp``, while in the jail it is the session's private one. Here every prefix is
translated to the host (by the caller's ``to_host``) before it is looked up, and absolute symlink
targets restart from the jail's root, so ``..`` after a symlink, ``..`` out of a bind mount and a
symlink to ``/tmp`` all end where the kernel inside the jail would end.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Final

__all__ = ["MAX_SYMLINKS", "SymlinkLoop", "resolve_in_jail"]

MAX_SYMLINKS: Final = 40
"""Symlinks followed in one resolution before giving up, as Linux does (ELOOP)."""


class SymlinkLoop(OSError):
    """A path follows more than :data:`MAX_SYMLINKS` symlinks (a loop): it cannot be resolved."""


def resolve_in_jail(path: str, to_host: Callable[[str], str], literal: Callable[[str], bool] | None = None) -> str:
    """The host path of the absolute jail-view ``path``, with every symlink, ``.`` and ``..`` resolved.

    Components that do not exist are kept as they are (a file about to be written), and so are the
    jail-view paths ``literal`` accepts: their symlinks are not followed (``/proc/self`` would lead to
    the process resolving, not to the one that will read it).

    Raises:
        SymlinkLoop: more than :data:`MAX_SYMLINKS` symlinks were followed.
        ValueError: ``path`` is relative (a caller's mistake: tools make paths absolute first).
    """
    if not path.startswith("/"):
        raise ValueError(f"a jail-view path must be absolute, got {path!r}")
    resolved: list[str] = []  # Invariant: the jail-view components resolved so far, no symlink among them
    pending = path.split("/")[::-1]  # next component last
    followed = 0
    while pending:
        part = pending.pop()
        if part in ("", "."):
            continue
        if part == "..":
            if resolved:
                resolved.pop()
            continue
        candidate = "/" + "/".join([*resolved, part])
        if literal is not None and literal(candidate):
            resolved.append(part)
            continue
        try:
            target = os.readlink(to_host(candidate))
        except OSError:  # not a symlink, or missing: the component stands as it is
            resolved.append(part)
            continue
        followed += 1
        if followed > MAX_SYMLINKS:
            raise SymlinkLoop(f"{path}: too many levels of symbolic links")
        if target.startswith("/"):
            resolved.clear()
        pending.extend(target.split("/")[::-1])
    return to_host("/" + "/".join(resolved))
