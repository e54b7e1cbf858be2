"""Mounting a tmpfs, where the daemon may (``CAP_SYS_ADMIN``): the runtime directory in memory.

The daemon mounts one over its runtime directory (:meth:`~tools.jail.runtime.RuntimeDir.hold_in_memory`),
so the daemon's file tools and every jail see the same files, every session's ``/tmp`` is in memory, and
its pages are charged to the memory group of the session that writes them: a session's ``/tmp`` counts
against its memory limit, the whole against ``tmp_mb``. Unmounted (lazily, so a straggler cannot hold
it) at the daemon's stop, and at start for what a daemon killed with ``-9`` left mounted.

Blocking: call from a worker thread.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import tempfile

__all__ = ["can_mount_tmpfs", "mount_tmpfs", "unmount", "unmount_under"]

log = logging.getLogger(__name__)

_MNT_DETACH = 2
_MS_NOSUID = 2
_MS_NODEV = 4


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


def mount_tmpfs(path: str, size_mb: int) -> None:
    """Mount a private tmpfs of ``size_mb`` MiB at ``path`` (mode 0700, no devices, no set-uid).

    Raises:
        OSError: the kernel refused (no ``CAP_SYS_ADMIN``).
    """
    options = f"size={size_mb}m,mode=0700,uid={os.getuid()},gid={os.getgid()}".encode()
    libc = _libc()
    if libc.mount(b"tmpfs", os.fsencode(path), b"tmpfs", _MS_NOSUID | _MS_NODEV, options) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), path)


def unmount(path: str) -> None:
    """Detach the mount at ``path``; nothing happens when none is there."""
    if _libc().umount2(os.fsencode(path), _MNT_DETACH) != 0:
        code = ctypes.get_errno()
        if code not in (22, 2):  # EINVAL: not a mount point; ENOENT: gone
            log.warning("cannot unmount %s: %s", path, os.strerror(code))


def unmount_under(directory: str) -> None:
    """Detach every mount at or below ``directory`` (what a killed daemon left), deepest first."""
    real = os.path.realpath(directory)
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as info:
            points = [line.split()[4].replace("\\040", " ") for line in info]
    except OSError:
        return
    inside = (p for p in points if p == real or p.startswith(real.rstrip("/") + "/"))
    for point in sorted(inside, key=len, reverse=True):
        unmount(point)


def can_mount_tmpfs() -> bool:
    """Whether this daemon may mount a tmpfs (tried once, on a scratch directory)."""
    probe = tempfile.mkdtemp(prefix="hx-tmpfs-probe-")
    try:
        mount_tmpfs(probe, 1)
    except OSError:
        return False
    else:
        unmount(probe)
        return True
    finally:
        os.rmdir(probe)
