"""A policy as bubblewrap arguments: the mounts, namespaces and environment of one jail.

Mounts apply in order, a later one covering an earlier one at the same place:

1. the whole file system read-only, a fresh ``/dev``, an own ``/proc`` (own PID namespace);
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
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Mapping, Sequence

from tools.jail.policy import JAIL_TMP, JailPolicy, SandboxMode

__all__ = ["AGENT_SOCKET", "inside", "jail_argv", "jail_env"]

AGENT_SOCKET = JAIL_TMP + "/.ssh-agent.sock"
"""Where the ssh-agent's socket appears in a jail that has it."""

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


def jail_argv(
    bwrap: str,
    policy: JailPolicy,
    *,
    cwd: str,
    binds: Sequence[str] = (),
    mounts_proc: bool = True,
    hide: Sequence[str] = (),
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
    """
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--unshare-pid"]
    argv += ["--proc", "/proc"] if mounts_proc else ["--tmpfs", "/proc", "--remount-ro", "/proc"]
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
    covered: list[str] = []
    for path in hidden:
        kind = _kind(path)
        if kind is None or (inside(path, [JAIL_TMP]) and not inside(path, roots)):
            continue
        if kind == stat.S_IFDIR:
            argv += ["--tmpfs", path]
            covered.append(path)
        else:
            argv += ["--ro-bind", "/dev/null", path]
    for path in policy.exposed:
        if _kind(path) == stat.S_IFDIR:
            argv += ["--ro-bind", path, path]
    for path in binds:
        argv += ["--bind", path, path]
    # Read-only only now: bwrap makes the mount points of the exposed directories and of the binds
    # (execute_code's workspace lives in the hidden runtime directory) in the tmpfs.
    for path in covered:
        argv += ["--remount-ro", path]
    if policy.ssh_agent_socket is not None and not inside(policy.ssh_agent_socket, hidden):
        argv += ["--bind", policy.ssh_agent_socket, AGENT_SOCKET]
    if not policy.network:
        argv.append("--unshare-net")
    # --new-session: the jail is its own session, so no TIOCSTI into the daemon's terminal.
    argv += ["--new-session", "--die-with-parent", "--chdir", cwd, "--"]
    return argv


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
