"""Fixtures that run a suite both jailed and in full-access: one daemon-wide launcher, a policy per test.

A conftest imports ``launcher`` and ``jails``; a test taking ``jails`` runs once per mode.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path

import attrs
import pytest
import trio

from config.sandbox import SandboxConfig
from tools.jail import JailPolicy, Launcher, SandboxMode, SessionJail, build_policy

__all__ = ["Jails", "host_pid", "jails", "launcher", "namespace_pids", "policy_for"]


def policy_for(
    mode: SandboxMode,
    workspace: Path,
    *,
    home: Path | None = None,
    config: SandboxConfig | None = None,
    session: str = "test",
    environ: Mapping[str, str] | None = None,
) -> JailPolicy:
    """A session policy working in ``workspace``: the daemon's home and runtime directory inside it (hidden)."""
    runtime = workspace / ".hx-runtime"
    tmp = runtime / f"s-{session}" / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    return build_policy(
        config or SandboxConfig(),
        mode=mode,
        workspace=str(workspace),
        tmp_dir=str(tmp),
        daemon_home=str(home if home is not None else workspace / "home"),
        runtime_dirs=[str(runtime)],
        environ=environ,
    )


def namespace_pids(namespace: str) -> list[int]:
    """The host pids of the processes in PID namespace ``namespace`` (zombies included)."""
    with os.scandir("/proc") as entries:
        names = [entry.name for entry in entries if entry.name.isdigit()]
    found = []
    for name in names:
        try:
            if os.readlink(f"/proc/{name}/ns/pid") == namespace:
                found.append(int(name))
        except OSError:
            continue
    return found


def host_pid(pid: int, namespace: str, start: str | None = None) -> int:
    """The host pid of the process that is ``pid`` in PID namespace ``namespace``; 0 once it is gone.

    A jailed process only knows its own namespace's pids; tests that print one give its namespace too.
    A namespace's name is an inode number the kernel gives to the next namespace once this one is gone,
    and pids inside are small numbers: a test that looks after the run also gives the process's ``start``
    time (field 22 of its ``stat``, ticks since boot), so another jail's process of the same numbers is
    not taken for it.
    """
    if namespace == os.readlink("/proc/self/ns/pid"):
        return pid
    for candidate in namespace_pids(namespace):
        try:
            with open(f"/proc/{candidate}/status") as status:
                nspid = next(line for line in status if line.startswith("NSpid:")).split()
            with open(f"/proc/{candidate}/stat", "rb") as stat:
                started = stat.read().rsplit(b")", 1)[1].split()[19].decode()
        except (OSError, StopIteration):
            continue
        if int(nspid[-1]) == pid and start in (None, started):
            return candidate
    return 0


@attrs.frozen
class Jails:
    """Makes the jails of one mode, all through the same launcher; :meth:`close` ends their resident shells."""

    mode: SandboxMode
    launcher: Launcher
    made: list[SessionJail] = attrs.field(factory=list, eq=False)

    @property
    def jailed(self) -> bool:
        """Whether processes run under bwrap in this mode."""
        return self.mode is not SandboxMode.FULL_ACCESS

    def jail(self, workspace: Path, *, home: Path | None = None, config: SandboxConfig | None = None) -> SessionJail:
        """A session jail working in ``workspace``."""
        jail = SessionJail(policy_for(self.mode, workspace, home=home, config=config), self.launcher)
        self.made.append(jail)
        return jail

    def close(self) -> None:
        """End the resident shells of the jails made, as a session's end does (outside any Trio run)."""

        async def close_all() -> None:
            for jail in self.made:
                await jail.aclose()

        trio.run(close_all)


@pytest.fixture(scope="session")
def launcher() -> Iterator[Launcher]:
    """One started launcher for the whole run, as a daemon has (its preflight has run)."""
    started = Launcher(SandboxConfig())
    started.start()
    trio.run(started.preflight)
    yield started
    trio.run(started.aclose)


@pytest.fixture(params=[SandboxMode.WORKSPACE_WRITE, SandboxMode.FULL_ACCESS], ids=["jailed", "full-access"])
def jails(request: pytest.FixtureRequest, launcher: Launcher) -> Iterator[Jails]:
    """Jails of each mode in turn; the jailed run is skipped where no jail can run."""
    mode: SandboxMode = request.param
    if mode is not SandboxMode.FULL_ACCESS and not launcher.status.available:
        pytest.skip(f"no jail can run here: {launcher.status.failed_step}: {launcher.status.error}")
    made = Jails(mode, launcher)
    yield made
    made.close()


@pytest.fixture
def hostile_jails(launcher: Launcher) -> Iterator[Jails]:
    """Jails for a test that hands the real tool a destructive command (``rm -rf /etc``, ``kill -1``): jailed only.

    Such a test checks that the command is refused before it runs. Should that refusal ever regress, the
    jail (a read-only system, no capabilities, a PID namespace of its own) is what keeps the command off the
    machine running the tests; in full-access it would run as whoever runs them, root in CI. Where no jail can
    run, the test is skipped rather than run unjailed.
    """
    if not launcher.status.available:
        pytest.skip(f"no jail can run here: {launcher.status.failed_step}: {launcher.status.error}")
    made = Jails(SandboxMode.WORKSPACE_WRITE, launcher)
    yield made
    made.close()
