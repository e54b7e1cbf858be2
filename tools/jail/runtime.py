"""The daemon's runtime directory and what every session's jail shares.

Every per-session temp directory, sandbox workspace and shell state file of one daemon lives under one
0700 directory whose name traces it to its home, inside one 0700 directory per user::

    <per-user directory>/         every home's runtime directory; never removed
    └── <first 12 hex of sha256(realpath(home))>/
        ├── home                  the home's real path (so a stranger can tell whose this is)
        └── s-<session id>/       one session's directory, removed when the session stops
            ├── tmp/              its private temp directory, seen as /tmp inside its jail
            └── hx-sbx-XXXXXXXX/  an execute_code workspace (script, stubs, RPC socket)

The per-user directory is ``hermes-actors-<uid>`` in ``$XDG_RUNTIME_DIR`` or the temp directory (never
``/tmp``: every jail has a private ``/tmp`` of its own, so an execute_code workspace there could not be
bound into its jail), or a private one of ours beside that name when another user took it first;
:mod:`messages.user_dir` chooses it at the daemon's start and records it in the home. Every jail hides
the whole per-user directory: its own daemon's runtime directory and every other home's, including those
of daemons that start or stop while the jail runs (a directory listed once and hidden one by one could
vanish under bubblewrap's mount, and one made later would not be hidden); and every other per-user
directory of ours there is when its session opens.

At start, once the daemon holds its single-instance lock, :meth:`RuntimeDir.clean` removes what earlier
runs of *this* home left there; a directory whose record names another home is never touched.

:class:`DaemonJails` is what the daemon's sessions share: the ``sandbox`` section, the runtime
directory, the launcher and the daemon's paths to hide. It hands each session its
:class:`SessionRuntime` (directories and :class:`~tools.jail.session.SessionJail`).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Mapping
from typing import TYPE_CHECKING

import attrs
import trio

from config.sandbox import SandboxConfig
from messages.user_dir import claim_user_dir, is_our_directory, user_dir_name, user_dirs_of_ours
from tools.jail._tmpfs import mount_tmpfs, unmount_under
from tools.jail.cgroups import SessionCgroup
from tools.jail.policy import JailPolicy, SandboxMode, build_policy, resolve_limits, resolve_mode
from tools.jail.process import kill_jails_under
from tools.jail.session import SessionJail

if TYPE_CHECKING:
    from tools.jail.launcher import Launcher

__all__ = [
    "HOME_RECORD",
    "DaemonJails",
    "RuntimeDir",
    "RuntimeDirError",
    "SessionRuntime",
    "hidden_daemon_paths",
    "unjailed_runtime",
]

log = logging.getLogger(__name__)

HOME_RECORD = "home"
"""The file in a runtime directory that records the real path of the home it belongs to."""

_SAFE_ID = re.compile(r"[A-Za-z0-9_-]{1,16}")


class RuntimeDirError(OSError):
    """The runtime directory cannot be used: it belongs to another user, is not a directory, or records
    another home (it is then left untouched)."""


def _home_digest(real_home: str) -> str:
    return hashlib.sha256(os.fsencode(real_home)).hexdigest()[:12]


def _recorded_home(directory: str) -> str | None:
    """The home a runtime directory's record names; None when it has no record."""
    try:
        with open(os.path.join(directory, HOME_RECORD), encoding="utf-8") as file:
            return file.read().strip()
    except FileNotFoundError:
        return None


def _force_remove(path: str) -> None:
    """Remove a file or a tree, even one a tool made read-only inside (chmod 0500 directories)."""

    def retry(function: object, failed: str, excinfo: object) -> None:
        # A read-only directory refuses to lose its entries: open it up, then try once more.
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(failed), 0o700)
            if os.path.isdir(failed) and not os.path.islink(failed):
                os.chmod(failed, 0o700)
                shutil.rmtree(failed, ignore_errors=True)
            else:
                os.unlink(failed)

    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, onerror=retry)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


@attrs.frozen
class RuntimeDir:
    """One home's runtime directory (paths only; the methods that touch the disk block).

    Attributes:
        path: The directory.
        home: The real path of the home it belongs to.
    """

    path: str
    home: str

    @classmethod
    def for_home(cls, home: str | os.PathLike[str], user_dir: str | os.PathLike[str]) -> RuntimeDir:
        """The runtime directory of ``home`` in the per-user directory ``user_dir`` (paths only; the one a
        daemon claimed is ``DaemonPaths.user_dir``)."""
        real = os.path.realpath(home)
        return cls(os.path.join(os.fspath(user_dir), _home_digest(real)), real)

    @classmethod
    def claim(cls, home: str | os.PathLike[str], record: str | os.PathLike[str]) -> RuntimeDir:
        """The runtime directory of ``home`` in the per-user directory its daemon claims, recorded in
        ``record`` (see :func:`~messages.user_dir.claim_user_dir`; blocking, with the instance lock held).

        Raises:
            OSError: no private per-user directory can be made.
        """
        return cls.for_home(home, claim_user_dir(record))

    @property
    def parent(self) -> str:
        """The per-user directory holding every home's runtime directory; each jail hides it whole."""
        return os.path.dirname(self.path)

    def prepare(self) -> None:
        """Create the per-user directory and this one (both 0700) and its home record, or check that
        existing ones are ours.

        Raises:
            RuntimeDirError: either is a symlink or not a directory, or belongs to another uid; or the
                record names another home.
        """
        for directory in (self.parent, self.path):
            with contextlib.suppress(FileExistsError):
                os.mkdir(directory, 0o700)
            info = os.lstat(directory)
            if not stat.S_ISDIR(info.st_mode):
                raise RuntimeDirError(f"runtime directory {directory} is not a directory; remove it")
            if info.st_uid != os.getuid():
                raise RuntimeDirError(f"runtime directory {directory} belongs to uid {info.st_uid}, not to us")
            if stat.S_IMODE(info.st_mode) != 0o700:
                os.chmod(directory, 0o700)
        recorded = _recorded_home(self.path)
        if recorded is None:
            record = os.path.join(self.path, HOME_RECORD)
            fd = os.open(record, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                file.write(self.home + "\n")
            return
        if recorded != self.home:
            raise RuntimeDirError(
                f"runtime directory {self.path} belongs to home {recorded!r}, not {self.home!r}; left untouched"
            )

    def clean(self) -> list[str]:
        """Remove what earlier runs of this home left (jails still running, session and sandbox
        directories, stale sockets, shell state files); only with the home's instance lock held.
        Returns the names removed.

        Raises:
            RuntimeDirError: see :meth:`prepare` (called first).
        """
        self.prepare()
        for pid in kill_jails_under(self.path):
            log.warning("killed a jail an earlier run of this home left running (bwrap pid %d)", pid)
        removed = [entry for entry in sorted(os.listdir(self.path)) if entry != HOME_RECORD]
        # The tmpfs a daemon killed with -9 left mounted over the directory goes with what it held.
        unmount_under(self.path)
        self.prepare()
        for entry in sorted(os.listdir(self.path)):
            if entry != HOME_RECORD:
                _force_remove(os.path.join(self.path, entry))
                removed += [] if entry in removed else [entry]
        # Where releases before the per-user directory kept this home's runtime directory: outside it, a
        # jail would not hide what a crashed daemon of theirs left there. Only if it is ours: anyone can
        # make a directory of that name and record this home in it.
        legacy = os.path.join(os.path.dirname(self.parent), f"{user_dir_name()}-{os.path.basename(self.path)}")
        if is_our_directory(legacy) and _recorded_home(legacy) == self.home:
            for pid in kill_jails_under(legacy):
                log.warning("killed a jail an earlier run of this home left running (bwrap pid %d)", pid)
            _force_remove(legacy)
            removed.append(legacy)
        return removed

    def remove(self) -> None:
        """Remove the whole directory, at the daemon's stop (its sessions and jails are gone)."""
        unmount_under(self.path)
        _force_remove(self.path)

    def hold_in_memory(self, size_mb: int) -> bool:
        """Mount a tmpfs of ``size_mb`` MiB over the (just prepared) directory, so every session's ``/tmp``
        lives in memory, its pages charged to the memory group of the session that writes them; False
        where the daemon may not mount. Blocking.

        One tmpfs for every session, not one each: each jail copies every mount of the host, and 200
        mounted sessions made every process start 4.1 ms slower (3.2 -> 7.3 ms).
        """
        try:
            mount_tmpfs(self.path, size_mb)
        except OSError:
            return False
        self.prepare()  # the home record, in the new file system
        return True

    def session_dir(self, session_id: str) -> str:
        """The directory of one session (its id when short and plain, else a digest of it)."""
        name = session_id if _SAFE_ID.fullmatch(session_id) else hashlib.sha256(session_id.encode()).hexdigest()[:16]
        return os.path.join(self.path, f"s-{name}")

    def create_session(self, session_id: str) -> str:
        """Create a session's directory and its ``tmp`` (both 0700, emptied of an earlier life); returns
        the session directory."""
        directory = self.session_dir(session_id)
        try:
            os.mkdir(directory, 0o700)
        except FileExistsError:
            _force_remove(directory)
            os.mkdir(directory, 0o700)
        os.mkdir(os.path.join(directory, "tmp"), 0o700)
        return directory

    def remove_session(self, session_id: str) -> None:
        """Remove a session's directory and everything in it."""
        directory = self.session_dir(session_id)
        # Most sessions leave their directories empty: two rmdir calls, where a tree walk costs ten
        # times as much CPU, and every session of a busy daemon comes this way.
        try:
            os.rmdir(os.path.join(directory, "tmp"))
            os.rmdir(directory)
        except OSError:
            _force_remove(directory)


@attrs.frozen
class SessionRuntime:
    """Where one session's tools run: its jail and its directories.

    Attributes:
        jail: The session's policy and the launcher.
        sandbox_dir: Where its execute_code workspaces are created (None: the system temp directory).
        owner: The session whose directory this is (a subagent shares its parent's).
    """

    jail: SessionJail
    sandbox_dir: str | None
    owner: str


def unjailed_runtime(config: SandboxConfig, home: str | os.PathLike[str], workspace: str) -> SessionRuntime:
    """The runtime of a session run without a daemon (tests, benchmarks): ``full-access``, the system temp
    directory; the file tools still hide the home and ``sandbox.deny_read``."""
    policy = build_policy(
        config, mode=SandboxMode.FULL_ACCESS, workspace=workspace, tmp_dir=tempfile.gettempdir(),
        daemon_home=str(home), runtime_dirs=(),  # no runtime directory
    )
    return SessionRuntime(SessionJail(policy), None, "")


@attrs.frozen(kw_only=True)
class DaemonJails:
    """What every session's jail of one daemon shares; owned by the daemon's root, passed down.

    Attributes:
        config: The ``sandbox`` section.
        runtime: The daemon's runtime directory (prepared and cleaned at start).
        home: ``HERMES_ACTORS_HOME``.
        launcher: The daemon's launcher (None: no process can be started jailed).
        daemon_paths: More of the daemon's paths to hide (a control socket outside the home).
        hidden_home: What is hidden whole in place of ``home``: for a named profile's daemon, the default
            profile's home, which holds every profile's (see :mod:`control.profiles`); None: ``home``.
    """

    config: SandboxConfig
    runtime: RuntimeDir
    home: str
    launcher: Launcher | None = None
    daemon_paths: tuple[str, ...] = attrs.field(default=(), converter=tuple[str, ...])
    hidden_home: str | None = None

    def mode_for(self, requested: str | None) -> SandboxMode:
        """A new session's mode (see :func:`~tools.jail.policy.resolve_mode`).

        Raises:
            SandboxModeRefused: unknown, or wider than ``sandbox.max_mode``.
        """
        return resolve_mode(requested, self.config)

    def skills_dirs(self) -> tuple[str, ...]:
        """The user's skills directory, bound read-only into the jail; created if missing (blocking).

        Created rather than left out: the agent may write its first skill during the session, and a
        directory missing when the session opens would never be bound into its jail.
        """
        path = os.path.join(self.home, "skills")
        os.makedirs(path, exist_ok=True)
        return (path,)

    async def open_session(
        self, session_id: str, mode: SandboxMode, workspace: str, limits: Mapping[str, int] | None = None
    ) -> SessionRuntime:
        """Create a session's directories and control groups, and build its policy.

        Args:
            session_id: The session.
            mode: Its sandbox mode.
            workspace: Its working directory.
            limits: What it asked of ``sandbox.limits`` (never more than the config's).

        Raises:
            OSError: its control groups could not be made.
            SandboxLimitsRefused: ``limits`` names an unknown limit or a value out of range.
        """
        narrowed = resolve_limits(limits, self.config)
        launcher = self.launcher if mode.jailed else None

        def create() -> tuple[str, JailPolicy]:
            # Control groups, directories and the skills looked up, every path resolved: all on disk,
            # in one trip to a worker thread. A full-access session has the daemon's authority: no
            # limits (see tools.jail.limits).
            cgroup = launcher.open_limits(session_id, narrowed) if launcher is not None else None
            try:
                directory = self.runtime.create_session(session_id)
                tmp = os.path.join(directory, "tmp")
                # Another home whose daemon made its per-user directory elsewhere is hidden too.
                others = user_dirs_of_ours(os.path.dirname(self.runtime.parent))
                policy = build_policy(
                    self.config, mode=mode, workspace=workspace, tmp_dir=tmp,
                    daemon_home=self.hidden_home or self.home, runtime_dirs=(self.runtime.parent, *others),
                    daemon_paths=self.daemon_paths, exposed=self.skills_dirs(), limits=narrowed, cgroup=cgroup,
                )  # fmt: skip
            except BaseException:
                self._remove(session_id, cgroup)
                raise
            return directory, policy

        directory, policy = await trio.to_thread.run_sync(create)
        return SessionRuntime(SessionJail(policy, self.launcher), directory, session_id)

    async def close_session(self, runtime: SessionRuntime) -> None:
        """End a session's resident shell, then remove its directories and control groups (its other
        processes are gone by now)."""
        await runtime.jail.aclose()
        await trio.to_thread.run_sync(self._remove, runtime.owner, runtime.jail.policy.cgroup)

    def _remove(self, session_id: str, cgroup: SessionCgroup | None) -> None:
        if cgroup is not None:
            cgroup.remove()
        self.runtime.remove_session(session_id)


def hidden_daemon_paths(home: str | os.PathLike[str], socket: str | os.PathLike[str]) -> tuple[str, ...]:
    """The control socket's directory when it lives outside the home (a fallback for deep homes); a
    jail must not reach it."""
    real_home = os.path.realpath(home)
    directory = os.path.dirname(os.path.realpath(socket))
    inside = directory == real_home or directory.startswith(real_home.rstrip(os.sep) + os.sep)
    return () if inside else (directory,)
