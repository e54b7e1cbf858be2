"""A policy as bubblewrap arguments: the mounts, namespaces and environment of one jail.

Mounts apply in order, a later one covering an earlier one at the same place:

1. the whole file system read-only, a fresh ``/dev`` with a ``/dev/shm`` of the session's size, an own
   ``/proc`` (own PID namespace), and an empty ``/run`` (where the host's daemons keep their sockets:
   Docker's, systemd's, D-Bus's, the user's own ``/run/user/<uid>``), but for the resolver's files;
2. the session's private temp directory at ``/tmp`` (the host's ``/tmp`` is out of sight), and our
   interpreter's prefixes read-only where they lie under the host's ``/tmp``;
3. the writable roots read-write at their own paths (the workspace read-only in ``read-only`` mode),
   after ``/tmp`` so that a workspace under the host's ``/tmp`` is still there;
4. every hidden path covered (a directory by an empty tmpfs, read-only after step 5, anything else
   by ``/dev/null``), after the roots so that hidden wins: a home inside a workspace, or a workspace
   inside the home, stays hidden. A hidden path under the host's ``/tmp`` is already out of sight,
   unless a root brought it back;
5. the exposed directories bound back read-only (skills inside a hidden home);
6. the extra ``binds`` read-write at their own paths (the execute_code workspace, whose socket is then
   the only one of the daemon's in the jail);
7. the ssh-agent socket at ``/tmp/.ssh-agent.sock`` when the user chose it.

Mount points that lie under ``/tmp`` are made by bwrap inside the session's temp directory.

The jail holds no privilege, whoever runs the daemon: a user namespace of its own (root in it is the
daemon's user, without a single capability: ``--cap-drop ALL``, the bounding set empty), no further user
namespaces (``--disable-userns``), its own IPC, UTS and cgroup namespaces, ``no_new_privs``, and the
system-call filter of :mod:`tools.jail._seccomp`. So nothing in it can unmount the jail's ``/proc`` to
reach the host's beneath it, remount a read-only path, or trace a process.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Mapping, Sequence

from tools.jail.policy import JAIL_TMP, JailPolicy, SandboxMode

__all__ = ["AGENT_SOCKET", "NO_PRIVILEGE", "inside", "jail_argv", "jail_env", "open_argv"]

AGENT_SOCKET = JAIL_TMP + "/.ssh-agent.sock"
"""Where the ssh-agent's socket appears in a jail that has it."""

NO_PRIVILEGE = (
    "--unshare-user", "--disable-userns", "--cap-drop", "ALL",
    "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
)  # fmt: skip
"""The namespaces and the capability drop of every jail (see the module's docstring)."""

_HOST_RUN = "/run"
# Where a resolver behind systemd-resolved or resolvconf keeps what /etc/resolv.conf points at.
_RESOLVER_DIRS = ("/run/systemd/resolve", "/run/resolvconf")

_INTERPRETER_PREFIXES = tuple(sorted({os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}))


def _kind(path: str) -> int | None:
    """The file type bits of ``path`` (not following a last symlink), None when it is missing."""
    try:
        return stat.S_IFMT(os.lstat(path).st_mode)
    except OSError:
        return None


def inside(path: str, roots: Sequence[str]) -> bool:
    """Whether ``path`` is one of ``roots`` or lies under one."""
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def _resolver_binds() -> list[str]:
    """The resolver's directories under ``/run``, bound back read-only over the jail's empty ``/run``."""
    argv: list[str] = []
    for directory in _RESOLVER_DIRS:
        if _kind(directory) == stat.S_IFDIR:
            argv += ["--ro-bind", directory, directory]
    return argv


def jail_argv(
    bwrap: str,
    policy: JailPolicy,
    *,
    cwd: str,
    binds: Sequence[str] = (),
    mounts_proc: bool = True,
    hide: Sequence[str] = (),
    seccomp_fd: int | None = None,
    info_fd: int | None = None,
    block_fd: int | None = None,
    as_init: bool = False,
) -> list[str]:
    """The ``bwrap`` command line (up to and including ``--``) that jails a process by ``policy``.

    Args:
        bwrap: The bubblewrap executable.
        policy: The session's policy (a jailed mode).
        cwd: The working directory as the jailed process sees it.
        binds: More host directories bound read-write at their own paths.
        mounts_proc: False where the kernel refuses a new ``/proc``: an empty one is mounted instead,
            so the host's processes stay out of sight.
        hide: More paths to cover, beside the policy's hidden ones (an ssh-agent the user did not
            choose to share).
        seccomp_fd: A descriptor the filter program can be read from (:mod:`tools.jail._seccomp`).
        info_fd: Where bubblewrap reports its jail's init, and ``block_fd`` what it then waits on before
            the command runs: the launcher puts the jail under its limits meanwhile.
        as_init: The process is the PID namespace's init itself (``--as-pid-1``: bwrap installs no reaper),
            as the resident shell's init is (:mod:`tools.jail.resident`).
    """
    argv = [bwrap, *NO_PRIVILEGE, "--ro-bind", "/", "/", "--dev", "/dev"]
    argv += ["--size", str(policy.limits.shm_mb * 1024 * 1024), "--tmpfs", "/dev/shm"]
    argv += ["--proc", "/proc"] if mounts_proc else ["--tmpfs", "/proc", "--remount-ro", "/proc"]
    # Read-only at the end, with the hidden paths' tmpfs: mount points may still be made in it.
    covered: list[str] = []
    if _kind(_HOST_RUN) == stat.S_IFDIR:
        argv += ["--tmpfs", _HOST_RUN, *_resolver_binds()]
        covered.append(_HOST_RUN)
    argv += ["--bind", policy.tmp_dir, JAIL_TMP]
    # Our own interpreter (the execute_code child runs it) stays in sight when it lives under the
    # host's /tmp, as a checkout or a CI clone there does.
    for prefix in _INTERPRETER_PREFIXES:
        if inside(prefix, [JAIL_TMP]) and _kind(prefix) == stat.S_IFDIR:
            argv += ["--ro-bind", prefix, prefix]
    roots = [root for root in policy.writable_paths() if root != policy.tmp_dir and _kind(root) == stat.S_IFDIR]
    for root in roots:
        argv += ["--bind", root, root]
    if policy.mode is SandboxMode.READ_ONLY and _kind(policy.workspace) == stat.S_IFDIR:
        roots.append(policy.workspace)
        argv += ["--ro-bind", policy.workspace, policy.workspace]
    hidden = [entry.path for entry in policy.hidden] + list(hide)
    for path in hidden:
        kind = _kind(path)
        if kind is None or (inside(path, [JAIL_TMP]) and not inside(path, roots)):
            continue
        if inside(path, covered) and not inside(path, roots):
            continue  # already out of sight under the empty /run
        argv += _cover(path, kind)
        covered += [path] if kind == stat.S_IFDIR else []
    argv += _brought_back(policy.exposed, binds, covered)
    if policy.ssh_agent_socket is not None and not inside(policy.ssh_agent_socket, hidden):
        argv += ["--bind", policy.ssh_agent_socket, AGENT_SOCKET]
    if not policy.network:
        argv.append("--unshare-net")
    argv += _descriptors(("--seccomp", seccomp_fd), ("--info-fd", info_fd), ("--block-fd", block_fd))
    # --new-session: the jail is its own session, so no TIOCSTI into the daemon's terminal.
    argv += ["--as-pid-1"] if as_init else []
    argv += ["--new-session", "--die-with-parent", "--chdir", cwd, "--"]
    return argv


def _descriptors(*options: tuple[str, int | None]) -> list[str]:
    """bubblewrap's options that name a descriptor, for those given."""
    return [part for option, fd in options if fd is not None for part in (option, str(fd))]


def _brought_back(exposed: Sequence[str], binds: Sequence[str], covered: Sequence[str]) -> list[str]:
    """The exposed directories read-only and the binds read-write over the covers, then the covering tmpfs
    made read-only: only now, since bwrap makes their mount points in it (execute_code's workspace lives
    in the hidden runtime directory)."""
    argv: list[str] = []
    for path in exposed:
        if _kind(path) == stat.S_IFDIR:
            argv += ["--ro-bind", path, path]
    for path in binds:
        argv += ["--bind", path, path]
    for path in covered:
        argv += ["--remount-ro", path]
    return argv


def _cover(path: str, kind: int | None) -> list[str]:
    """What hides ``path``: an empty tmpfs over a directory (read-only once mount points are made), or
    ``/dev/null`` over anything else."""
    return ["--tmpfs", path] if kind == stat.S_IFDIR else ["--ro-bind", "/dev/null", path]


def open_argv(
    bwrap: str,
    *,
    cwd: str,
    hidden: Sequence[str] = (),
    exposed: Sequence[str] = (),
    binds: Sequence[str] = (),
    mounts_proc: bool = True,
    info_fd: int | None = None,
    block_fd: int | None = None,
) -> list[str]:
    """The ``bwrap`` command line of a ``full-access`` process: the file system as the daemon's user sees
    it, but for ``hidden`` (the daemon's own paths), in a PID namespace of its own that dies with the
    daemon (so ``kill -9`` of the daemon leaves nothing behind). Its privileges are the daemon's.

    Args:
        bwrap: The bubblewrap executable.
        cwd: The working directory.
        hidden: Paths covered (the daemon's home, runtime directory and control socket).
        exposed: Directories inside them bound back read-only (skills), as the file tools show them.
        binds: Directories inside them bound back read-write (the execute_code workspace).
        mounts_proc: False where the kernel refuses a new ``/proc``: the host's stays.
        info_fd: See :func:`jail_argv` (with ``block_fd``).
    """
    argv = [bwrap, "--dev-bind", "/", "/", "--unshare-pid"]
    if mounts_proc:
        argv += ["--proc", "/proc"]
    covered = []
    for path in hidden:
        kind = _kind(path)
        if kind is not None:
            argv += _cover(path, kind)
            covered += [path] if kind == stat.S_IFDIR else []
    argv += _brought_back(exposed, binds, covered)
    argv += _descriptors(("--info-fd", info_fd), ("--block-fd", block_fd))
    return [*argv, "--new-session", "--die-with-parent", "--chdir", cwd, "--"]


def jail_env(env: Mapping[str, str], policy: JailPolicy) -> tuple[dict[str, str], tuple[str, ...]]:
    """The environment a jailed process gets from ``env``, and the paths it names that must be hidden.

    Temp variables point at the jail's private ``/tmp``; ``SSH_AUTH_SOCK`` at the bound agent, or
    (when the user did not choose to share it) it is removed and its socket hidden.
    """
    jailed = dict(env)
    for name in ("TMPDIR", "TMP", "TEMP"):
        if name in jailed or name == "TMPDIR":
            jailed[name] = JAIL_TMP
    hide: tuple[str, ...] = ()
    agent = jailed.pop("SSH_AUTH_SOCK", None)
    if policy.ssh_agent_socket is not None:
        jailed["SSH_AUTH_SOCK"] = AGENT_SOCKET
    elif agent and os.path.isabs(agent):
        hide = (os.path.realpath(agent),)
    return jailed, hide
