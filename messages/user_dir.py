"""The per-user directory: where one uid's daemons keep their sockets, out of every other user's reach.

Every home's runtime directory (:mod:`tools.jail.runtime`: its sessions' temp directories, execute_code
workspaces and their RPC sockets) and the control socket's fallback for a deep home
(:mod:`control.paths`) live in one 0700 directory of the daemon's uid. Where, in this order:

1. ``$XDG_RUNTIME_DIR/hermes-actors-<uid>`` when that variable names a directory of ours closed to others
   (no other user can create anything there);
2. else ``<base>/hermes-actors-<uid>``: ``<base>`` is the system temp directory unless that is ``/tmp``
   (every jail has a private ``/tmp``, where a workspace could not be bound into it) or too deep for the
   deepest socket, else ``/var/tmp``;
3. when another user took that name first (their directory, a symlink, a file, a directory open to
   others), another user's squat must not stop the daemon: it is left alone, and the directory is
   ``<base>/hermes-actors-<uid>.XXXXXXXX`` (made by ``mkdtemp``, so nobody can take the name before us),
   an existing one of ours if another home already made one, so that one directory still holds every
   home's runtime directory and every jail that hides it hides them all.

The daemon claims it at start (:func:`claim_user_dir`, with its home's instance lock held) and records
where it is in ``run/user-dir.path`` of its home: a client finds the fallback control socket there
without asking the daemon (:func:`find_user_dir`), and the next start reuses it while it is still a
private directory of ours, wherever its environment would have put a new one. Per-user directories are
never removed.

Jails hide every per-user directory of ours they can find (:func:`user_dirs_of_ours`): two homes that
made theirs at the same moment may end up in two, and one whose environment differs (no
``XDG_RUNTIME_DIR``) in another base.

Trio-free: the CLI finds the control socket with it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import tempfile

from messages.sockets import MAX_SOCKET_PATH_BYTES

__all__ = [
    "DEEPEST_SOCKET",
    "claim_user_dir",
    "default_user_dir",
    "find_user_dir",
    "is_our_directory",
    "user_dir_name",
    "user_dirs_of_ours",
]

log = logging.getLogger(__name__)

#: What the deepest socket under a per-user directory adds to its path: a session's execute_code socket,
#: ``/<home digest>/s-<session>/hx-sbx-XXXXXXXX/rpc.sock`` (the layout is :mod:`tools.jail.runtime`'s).
DEEPEST_SOCKET = len("/" + "x" * 12 + "/s-" + "x" * 16 + "/hx-sbx-XXXXXXXX/rpc.sock")

# The longest name a per-user directory gets: mkdtemp's, eight random characters after the prefix.
_LONGEST_NAME_SUFFIX = len(".XXXXXXXX")
_VAR_TMP = "/var/tmp"


def user_dir_name(uid: int | None = None) -> str:
    """``hermes-actors-<uid>``: the per-user directory's usual name (our uid by default)."""
    return f"hermes-actors-{os.getuid() if uid is None else uid}"


def _fits(base: str) -> bool:
    longest = os.path.join(base, user_dir_name()) + "x" * _LONGEST_NAME_SUFFIX
    return len(os.fsencode(longest)) + DEEPEST_SOCKET <= MAX_SOCKET_PATH_BYTES


def _why_not_private(path: str) -> str | None:
    """Why ``path`` cannot be our per-user directory (said as ``f"{path} {reason}"``); None when it can: a
    real directory (not a symlink) of our uid that no other user may enter."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return "is missing"
    if stat.S_ISLNK(info.st_mode):
        return "is a symlink"
    if not stat.S_ISDIR(info.st_mode):
        return "is not a directory"
    if info.st_uid != os.getuid():
        return f"belongs to uid {info.st_uid}"
    if stat.S_IMODE(info.st_mode) & 0o077:
        return f"is open to other users (mode {stat.S_IMODE(info.st_mode):o})"
    return None


def is_our_directory(path: str) -> bool:
    """Whether ``path`` is a real directory (not a symlink) of our uid."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()


def _xdg_base() -> str | None:
    """``$XDG_RUNTIME_DIR`` when it is absolute, ours and private, and not too deep; else None."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime) and _why_not_private(runtime) is None and _fits(runtime):
        return runtime
    return None


def _temp_base() -> str:
    """The system temp directory, unless it is (under) ``/tmp`` or too deep: then ``/var/tmp``."""
    base = tempfile.gettempdir()
    real = os.path.realpath(base)
    if real != "/tmp" and not real.startswith("/tmp/") and _fits(base):
        return base
    return _VAR_TMP


def default_user_dir() -> str:
    """Where a per-user directory is made when no record names one (reads the disk, writes nothing)."""
    return os.path.join(_xdg_base() or _temp_base(), user_dir_name())


def _read_record(record: str | os.PathLike[str]) -> str | None:
    try:
        with open(record, encoding="utf-8") as file:
            recorded = file.read().strip()
    except (OSError, ValueError):
        return None
    return recorded if os.path.isabs(recorded) else None


def find_user_dir(record: str | os.PathLike[str]) -> str:
    """The per-user directory of the home whose record this is: the recorded one while it is still a
    private directory of ours, else where a first start would make it (reads the disk, writes nothing; a
    client's view)."""
    recorded = _read_record(record)
    return recorded if recorded is not None and _why_not_private(recorded) is None else default_user_dir()


def _fallback_of_ours(base: str) -> str | None:
    """A per-user directory of ours that an earlier squat made us create in ``base``, if one is there."""
    prefix = user_dir_name() + "."
    with contextlib.suppress(OSError):
        for name in sorted(os.listdir(base)):
            if name.startswith(prefix) and _why_not_private(os.path.join(base, name)) is None:
                return os.path.join(base, name)
    return None


def _write_record(record: str | os.PathLike[str], directory: str) -> None:
    """Replace the record in one step (a client reading it sees the old directory or the new one)."""
    temporary = f"{os.fspath(record)}.{os.getpid()}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        file.write(directory + "\n")
    os.replace(temporary, record)


def claim_user_dir(record: str | os.PathLike[str], base: str | None = None) -> str:
    """The per-user directory for the home whose record this is: reused when the record names one still
    ours, else made (or found) as the module docstring says, 0700, and recorded. Blocking; only with the
    home's instance lock held (it writes the record).

    Args:
        record: The home's ``run/user-dir.path`` (its directory must exist).
        base: Where to make a new one (tests); by default ``$XDG_RUNTIME_DIR`` or the temp base.

    Raises:
        OSError: no directory can be made there (the base is missing or not writable).
    """
    recorded = _read_record(record)
    if recorded is not None:
        problem = _why_not_private(recorded)
        if problem is None:
            return recorded
        log.warning("cannot use the recorded runtime directory %s: it %s; choosing another", recorded, problem)
    base = base if base is not None else _xdg_base() or _temp_base()
    directory = os.path.join(base, user_dir_name())
    with contextlib.suppress(FileExistsError):
        os.mkdir(directory, 0o700)
    problem = _why_not_private(directory)
    if problem is not None:
        # Someone else's (or a trap): never followed, never changed, never a reason to refuse to start.
        squatted = directory
        directory = _fallback_of_ours(base) or tempfile.mkdtemp(prefix=user_dir_name() + ".", dir=base)
        log.warning("cannot use %s: it %s (left alone); using %s instead", squatted, problem, directory)
    if stat.S_IMODE(os.lstat(directory).st_mode) != 0o700:
        os.chmod(directory, 0o700)  # a umask may have taken our own bits
    if directory != recorded:
        _write_record(record, directory)
    return directory


def user_dirs_of_ours(*bases: str) -> tuple[str, ...]:
    """Every per-user directory of ours present now, in ``bases`` and wherever :func:`claim_user_dir` may
    make one (blocking: lists those directories). Also the ``hermes-actors-<uid>-<digest>`` runtime
    directories of releases before the per-user directory, which their homes' next start removes."""
    name = user_dir_name()
    found: dict[str, None] = {}
    xdg = _xdg_base()
    for base in dict.fromkeys((*bases, *([xdg] if xdg else []), _temp_base(), _VAR_TMP)):
        with contextlib.suppress(OSError):
            for entry in sorted(os.listdir(base)):
                path = os.path.join(base, entry)
                if (entry == name or entry.startswith((name + ".", name + "-"))) and is_our_directory(path):
                    found[path] = None
    return tuple(found)
