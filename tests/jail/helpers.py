"""Running a command in a jail and reading what it printed, for the jail tests."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

import trio

from config.sandbox import SandboxConfig
from tests.jail.fixtures import namespace_pids
from tools.jail import HeadTailBuffer, JailedProcess, JailPolicy, Launcher, drain, open_launcher
from tools.jail.runtime import DaemonJails, RuntimeDir

BASE_ENV = {"PATH": os.environ.get("PATH", os.defpath), "LANG": "C.UTF-8"}


async def run(
    launcher: Launcher, policy: JailPolicy, command: str, *, cwd: str | None = None, env: Mapping[str, str] | None = None
) -> tuple[int, str]:
    """Run ``bash -c command`` under ``policy`` to its end; its exit status and output (stderr merged)."""
    process = await launcher.spawn(
        ["bash", "-c", command], policy=policy, cwd=cwd or policy.workspace, env=env or BASE_ENV, merge_stderr=True
    )
    return await finish(process)


class NoJail(Exception):
    """No jail can run here (the message says why)."""


@asynccontextmanager
async def open_daemon_jails(work: Path, config: SandboxConfig) -> AsyncIterator[DaemonJails]:
    """A daemon's jails as a daemon of the home ``work/home`` has them (the runtime directory cleaned).

    Raises:
        NoJail: no jail can run here.
    """
    home = work / "home"
    home.mkdir()
    async with open_launcher(config) as launcher:
        if not launcher.status.available:
            raise NoJail(launcher.status.error)
        runtime_dir = RuntimeDir.for_home(home, str(work / "user"))
        runtime_dir.clean()
        yield DaemonJails(config=config, runtime=runtime_dir, home=str(home), launcher=launcher)


async def finish(process: JailedProcess) -> tuple[int, str]:
    """Read ``process``'s output until it exits; its exit status and output."""
    output = HeadTailBuffer(1 << 20)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(drain, process.stdout, output)
        code = await process.wait()
    process.close_pipes()
    return code, output.render()


class PidNamespace:
    """A PID namespace a test watches, held open while it does.

    A namespace's name (``pid:[inode]``) is an inode number, and the kernel gives a freed one to the next
    namespace made: a test that polled a name after its namespace died could see another test's jail
    there (xdist runs jail tests side by side) and wait for it in vain. An open descriptor keeps the
    namespace's inode, so the name stays this namespace's until :meth:`close`.

    Raises:
        LookupError: no process is in the namespace (it is gone, or its name was already reused).
    """

    def __init__(self, name: str) -> None:
        for pid in namespace_pids(name):
            try:
                fd = os.open(f"/proc/{pid}/ns/pid", os.O_RDONLY)
            except OSError:
                continue
            if os.readlink(f"/proc/self/fd/{fd}") == name:
                self.name, self._fd = name, fd
                return
            os.close(fd)
        raise LookupError(f"no process is in PID namespace {name}")

    @classmethod
    def of(cls, pid: int) -> PidNamespace:
        """The namespace process ``pid`` is in."""
        return cls(os.readlink(f"/proc/{pid}/ns/pid"))

    def alive(self) -> bool:
        """Whether any process still runs (not a zombie) in the namespace."""
        for pid in namespace_pids(self.name):
            try:
                with open(f"/proc/{pid}/stat", "rb") as stat:
                    state = stat.read().rsplit(b")", 1)[1].split()[0]
            except OSError:
                continue
            if state not in (b"Z", b"X"):
                return True
        return False

    def close(self) -> None:
        """Let the namespace go (its name may then pass to a newer one)."""
        os.close(self._fd)

    def __enter__(self) -> PidNamespace:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
