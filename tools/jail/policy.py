"""A session's sandbox policy: what its processes and file tools may read and write.

One :class:`JailPolicy` per session, built once from the ``sandbox`` config section by
:func:`build_policy`. The launcher turns it into bubblewrap mounts; the in-process file tools ask
it the same questions through :meth:`JailPolicy.check_read` and :meth:`JailPolicy.check_write`, so
a path refused to ``cat`` is refused to ``read_file`` too. Those resolve a path as the kernel in the
jail would (``_resolve``: ``/tmp`` is the session's own, symlinks before ``..``) and judge where it
really is; every refusal names the rule that refused. One rule is the file tools' alone: they run in
the daemon, where ``/proc`` (and ``/dev/fd``, which leads there) describes the daemon, so it is
refused to them in every mode, while the session's processes see their own.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Iterable, Mapping

import attrs

from config.sandbox import SANDBOX_MODES, SandboxConfig, SandboxLimits
from tools.jail.cgroups import SessionCgroup
from tools.jail._resolve import SymlinkLoop, resolve_in_jail
from tools.errors import ToolInputError

__all__ = [
    "HiddenPath",
    "JailPolicy",
    "PathRefused",
    "SandboxMode",
    "SandboxLimitsRefused",
    "SandboxModeRefused",
    "build_policy",
    "resolve_limits",
    "resolve_mode",
]

JAIL_TMP = "/tmp"
"""Where a jailed process sees its session's private temp directory."""


class SandboxMode(enum.Enum):
    """How far a session's tools reach, narrowest first."""

    READ_ONLY = "read-only"  # the file system read-only; only the private /tmp is writable
    WORKSPACE_WRITE = "workspace-write"  # also the working directory and sandbox.writable_roots
    FULL_ACCESS = "full-access"  # no jail: the old behaviour, chosen in config.yaml only

    @property
    def jailed(self) -> bool:
        """Whether processes of this mode run in a jail (every mode but ``full-access``)."""
        return self is not SandboxMode.FULL_ACCESS

    def wider_than(self, other: SandboxMode) -> bool:
        """True when this mode allows more than ``other``."""
        return SANDBOX_MODES.index(self.value) > SANDBOX_MODES.index(other.value)


class SandboxModeRefused(ValueError):
    """A session asked for a mode the daemon does not allow (wider than ``sandbox.max_mode``, or unknown)."""


class SandboxLimitsRefused(SandboxModeRefused):
    """A session asked for limits that do not exist or are out of range (it may ask for less, never more)."""


def resolve_limits(requested: Mapping[str, int] | None, config: SandboxConfig) -> SandboxLimits:
    """A new session's limits: ``sandbox.limits``, lowered where ``requested`` asks for less.

    Raises:
        SandboxLimitsRefused: ``requested`` names an unknown limit or a value out of its range.
    """
    try:
        return config.limits.narrowed(requested or {})
    except (TypeError, ValueError) as exc:
        raise SandboxLimitsRefused(f"sandbox limits: {exc}") from None


class PathRefused(ToolInputError):
    """A file tool was asked for a path the sandbox policy hides or does not let it write; says which rule."""


def resolve_mode(requested: str | None, config: SandboxConfig) -> SandboxMode:
    """The mode of a new session: ``requested`` when given (never wider than ``max_mode``), else ``mode``.

    Raises:
        SandboxModeRefused: ``requested`` is not a mode, or is wider than ``sandbox.max_mode``.
    """
    if requested is None:
        return SandboxMode(config.mode)
    try:
        mode = SandboxMode(requested)
    except ValueError:
        raise SandboxModeRefused(
            f"unknown sandbox mode {requested!r}: use one of {', '.join(SANDBOX_MODES)}"
        ) from None
    if mode.wider_than(SandboxMode(config.max_mode)):
        raise SandboxModeRefused(
            f"sandbox mode {requested!r} is wider than this daemon allows (sandbox.max_mode: {config.max_mode})"
        )
    return mode


@attrs.frozen
class HiddenPath:
    """A path no tool may see, and the rule that hides it (quoted in the refusal).

    ``of_daemon`` marks the daemon's own paths (its home, runtime directory, control socket): hidden even
    from a ``full-access`` session's processes, which see every other path as the daemon's user does.
    """

    path: str
    rule: str
    of_daemon: bool = False


_HOST_TMP = HiddenPath(JAIL_TMP, "a jailed session's /tmp is its own temp directory; the host's /tmp is out of sight")

PROC = "/proc"
"""Where each process sees itself (``/proc/self``), its open files (``/dev/fd``) and other processes."""
# The file tools run in the daemon: through them /proc is the daemon's (its mount table, its
# environment with the provider keys), never the session's, in every mode.
_DAEMON_PROC = HiddenPath(
    PROC,
    "the file tools run in the daemon, so /proc would describe the daemon, not this session; read it with "
    "the terminal tool instead, whose commands run as the session's own processes, in its jail when it has one",
)


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _normalized(path: str) -> str:
    """``path`` without ``.``, ``..`` or repeated slashes; POSIX keeps a leading ``//``, the jail does not."""
    return os.path.normpath("/" + path.lstrip("/") if path.startswith("//") else path)


def _named(shown: str, real: str) -> str:
    """How a refusal names a path: as given, and where it resolves when that differs."""
    return shown if real == shown else f"{shown} (resolves to {real})"


def _deepest(path: str, roots: Iterable[str]) -> str | None:
    """The longest of ``roots`` that contains ``path``, None when none does."""
    return max((root for root in roots if _within(path, root)), key=len, default=None)


@attrs.frozen(kw_only=True)
class JailPolicy:
    """What one session's tools may touch. Paths are absolute and resolved (no symlinks, no ``..``).

    Attributes:
        mode: The session's mode.
        workspace: The session's working directory (writable under ``workspace-write``).
        tmp_dir: The session's private temp directory on the host, seen as ``/tmp`` in the jail.
        writable_roots: More writable directories (``sandbox.writable_roots``; ``workspace-write`` only).
        hidden: Paths hidden entirely: the daemon's home, its runtime directory, ``sandbox.deny_read``.
        exposed: Directories inside a hidden path that are bound back read-only (skills).
        network: False leaves the jail only its own loopback.
        ssh_agent_socket: The ssh-agent socket bound into the jail, None for none.
        limits: What the session's processes may use together (see :mod:`tools.jail.limits`).
        cgroup: The session's control groups, None where the daemon has none (then resource limits).
    """

    mode: SandboxMode
    workspace: str
    tmp_dir: str
    writable_roots: tuple[str, ...] = ()
    hidden: tuple[HiddenPath, ...] = ()
    exposed: tuple[str, ...] = ()
    network: bool = True
    ssh_agent_socket: str | None = None
    limits: SandboxLimits = SandboxLimits()
    cgroup: SessionCgroup | None = attrs.field(default=None, eq=False)

    def daemon_paths(self) -> tuple[str, ...]:
        """The daemon's own hidden paths: what even a ``full-access`` session's processes do not see."""
        return tuple(entry.path for entry in self.hidden if entry.of_daemon)

    @property
    def jailed(self) -> bool:
        """Whether processes run in a jail (every mode but ``full-access``)."""
        return self.mode.jailed

    def writable_paths(self) -> tuple[str, ...]:
        """The host directories a jailed process may write, the private temp directory first."""
        if self.mode is SandboxMode.READ_ONLY:
            return (self.tmp_dir,)
        return (self.tmp_dir, self.workspace, *self.writable_roots)

    def host_path(self, path: str) -> str:
        """Where an absolute path the model gave (as a jailed process would see it) is on the host.

        ``/tmp/x`` is the session's private ``tmp_dir/x`` when jailed, unless it lies in the workspace or
        (``workspace-write``) a writable root: those are bound over the private ``/tmp`` at their own
        paths. Other paths are unchanged. Lexical only: ``.``, ``..`` and repeated slashes are normalized
        away, symlinks are not resolved (:meth:`resolve` does both, in the kernel's order).
        """
        return self._to_host(_normalized(path))

    def jail_path(self, real: str) -> str:
        """Where the resolved host path ``real`` is seen inside the jail (the inverse of :meth:`host_path`)."""
        if self.jailed and _within(real, self.tmp_dir):
            return JAIL_TMP + real[len(self.tmp_dir) :]
        return real

    def _to_host(self, path: str) -> str:
        if not self.jailed or not _within(path, JAIL_TMP):
            return path
        # The jail binds these over its private /tmp at their own paths (writable roots only when writable).
        own = (self.workspace, *self.writable_roots) if self.mode is SandboxMode.WORKSPACE_WRITE else (self.workspace,)
        if any(_within(path, root) for root in own):
            return path
        return self.tmp_dir + path[len(JAIL_TMP) :]

    def resolve(self, path: str) -> str:
        """The host path of the absolute ``path``, every symlink and ``..`` resolved as in the jail.

        Nothing is checked: see :meth:`check_read` and :meth:`check_write`.

        Raises:
            SymlinkLoop: the path follows a symlink loop.
        """
        # Inside /proc nothing is followed: /proc/self is whoever resolves, /proc/self/fd/N anything it has open.
        return resolve_in_jail(path, self._to_host, literal=lambda candidate: _within(candidate, PROC))

    def hiding_rule(self, real: str) -> HiddenPath | None:
        """The rule that hides the resolved host path ``real``, None when tools may read it.

        The deepest rule wins: the session's own temp directory and the exposed directories sit inside
        hidden ones (the runtime directory, the home) and stay readable, while a hidden path inside an
        allowed one (a home under ``/tmp`` of a full-access session) stays hidden. A jailed session
        sees its own temp directory at ``/tmp``, never the host's: that is hidden too. ``/proc`` is always
        hidden: through the file tools it would be the daemon's (a jailed process still sees its own).
        """
        if _within(real, PROC):
            return _DAEMON_PROC
        hidden = max((h for h in self.hidden if _within(real, h.path)), key=lambda h: len(h.path), default=None)
        if hidden is not None:
            allowed = _deepest(real, (self.tmp_dir, *self.exposed))
            return hidden if allowed is None or len(allowed) <= len(hidden.path) else None
        if self._in_host_tmp(real):
            return _HOST_TMP
        return None

    def _in_host_tmp(self, real: str) -> bool:
        # Under the host's /tmp, the jail shows only its private /tmp and the roots it binds over it.
        in_tmp = _within(real, JAIL_TMP) and not _within(real, self.tmp_dir)
        return self.jailed and in_tmp and self._to_host(real) != real

    def check_read(self, path: str) -> str:
        """The resolved host path of the absolute ``path`` if tools may read it.

        Raises:
            PathRefused: the path is (or resolves into) a hidden path, or follows a symlink loop.
        """
        return self.check_read_resolved(self._resolved(path), path)

    def _resolved(self, path: str) -> str:
        try:
            return self.resolve(path)
        except SymlinkLoop:
            raise PathRefused(
                f"Refused: {path} follows a symlink loop (too many levels of symbolic links), so where it "
                "leads cannot be checked."
            ) from None

    def check_read_resolved(self, real: str, shown: str) -> str:
        """``real`` (a resolved host path) if tools may read it; ``shown`` names it in the refusal.

        For re-checking the path a file was actually opened at, after :meth:`check_read`.

        Raises:
            PathRefused: ``real`` is a hidden path.
        """
        hidden = self.hiding_rule(real)
        if hidden is not None:
            named = _named(shown, real)
            raise PathRefused(f"Refused by the sandbox policy: {named} is hidden from tools ({hidden.rule}).")
        return real

    def check_write(self, path: str) -> str:
        """The resolved host path of ``path`` if tools may write it.

        Raises:
            PathRefused: the path is hidden, read-only exposed, or (when jailed) outside the writable roots.
        """
        return self.check_write_resolved(self._resolved(path), path)

    def check_write_resolved(self, real: str, shown: str) -> str:
        """``real`` (a resolved host path) if tools may write it; ``shown`` names it in the refusal.

        Raises:
            PathRefused: ``real`` is hidden, read-only exposed, or (when jailed) outside the writable roots.
        """
        self.check_read_resolved(real, shown)
        if any(_within(real, exposed) for exposed in self.exposed):
            raise PathRefused(
                f"Refused by the sandbox policy: {_named(shown, real)} is read-only for tools (a skills directory)."
            )
        if not self.jailed or any(_within(real, root) for root in self.writable_paths()):
            return real
        where = ", ".join(JAIL_TMP if root == self.tmp_dir else root for root in self.writable_paths())
        more = "" if self.mode is SandboxMode.READ_ONLY else "; more can be added with sandbox.writable_roots"
        raise PathRefused(
            f"Refused by the sandbox policy: {_named(shown, real)} is outside the writable roots of this "
            f"{self.mode.value} session ({where}){more}."
        )

    def hidden_within(self, real: str) -> tuple[str, ...]:
        """The hidden paths strictly inside the resolved directory ``real``, for a walk to leave out.

        That includes ``/proc`` when ``real`` holds it and, in a jailed session, the host's ``/tmp`` (with
        whatever lies in it).
        """
        inside = [h.path for h in self.hidden if h.path != real and _within(h.path, real)]
        if real != PROC and _within(PROC, real):
            inside.append(PROC)
        if self.jailed and real != JAIL_TMP and _within(JAIL_TMP, real):
            inside.append(JAIL_TMP)
        return tuple(inside)

    def check_cwd(self, path: str) -> str:
        """The host directory of ``path``, where a jailed process of the session may start.

        As :meth:`check_read`, except that ``/proc`` is allowed: the jail mounts its own, so a shell
        that changed into it starts its next command there and sees the session's processes.

        Raises:
            PathRefused: the path is (or resolves into) a hidden path, or follows a symlink loop.
        """
        real = self._resolved(path)
        return real if _within(real, PROC) else self.check_read_resolved(real, path)


def _resolved(path: str, user_home: str) -> str:
    if path == "~" or path.startswith("~/"):
        path = user_home + path[1:]
    return os.path.realpath(path)


def build_policy(
    config: SandboxConfig,
    *,
    mode: SandboxMode,
    workspace: str,
    tmp_dir: str,
    daemon_home: str,
    runtime_dirs: Iterable[str],
    daemon_paths: Iterable[str] = (),
    exposed: Iterable[str] = (),
    environ: Mapping[str, str] | None = None,
    limits: SandboxLimits | None = None,
    cgroup: SessionCgroup | None = None,
) -> JailPolicy:
    """The policy of one session.

    Args:
        config: The ``sandbox`` section.
        mode: The session's mode (see :func:`resolve_mode`).
        workspace: The session's working directory.
        tmp_dir: The session's private temp directory (created by the caller).
        daemon_home: ``HERMES_ACTORS_HOME``: always hidden.
        runtime_dirs: Where every session's temp and sandbox directories live (the daemon's per-user
            directory, every home's, and any other of its user's): hidden, but for this session's own
            ``tmp_dir``, which is bound in as ``/tmp``.
        daemon_paths: Other paths of the daemon to hide (a control socket outside the home).
        exposed: Directories bound back read-only inside hidden paths (skills).
        environ: The user's environment, for ``~`` and ``SSH_AUTH_SOCK`` (the daemon's by default).
        limits: The session's limits (``sandbox.limits`` by default).
        cgroup: The session's control groups, where the daemon made them.
    """
    env = os.environ if environ is None else environ
    user_home = env.get("HOME") or os.path.expanduser("~")
    hidden = [
        HiddenPath(os.path.realpath(daemon_home), "the daemon's home, HERMES_ACTORS_HOME, is always hidden", True),
        *(
            HiddenPath(os.path.realpath(p), "other sessions' and sandboxes' directories are always hidden", True)
            for p in runtime_dirs
        ),
        *(HiddenPath(os.path.realpath(p), "a path of the daemon's is always hidden", True) for p in daemon_paths),
        *(HiddenPath(_resolved(p, user_home), f"{p} is listed in sandbox.deny_read") for p in config.deny_read),
    ]
    agent = env.get("SSH_AUTH_SOCK") if config.ssh_agent else None
    return JailPolicy(
        mode=mode,
        workspace=os.path.realpath(workspace),
        tmp_dir=os.path.realpath(tmp_dir),
        writable_roots=tuple(_resolved(p, user_home) for p in config.writable_roots),
        hidden=tuple(hidden),
        exposed=tuple(os.path.realpath(p) for p in exposed),
        network=config.network,
        ssh_agent_socket=agent or None,
        limits=config.limits if limits is None else limits,
        cgroup=cgroup,
    )
