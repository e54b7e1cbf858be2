"""The preflight names the failing step and what to do; no jail means a clear refusal, never an unjailed run."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from config.sandbox import SandboxConfig
from tests.jail.fixtures import policy_for
from tests.jail.helpers import BASE_ENV, finish, run
from tools.jail import JailUnavailable, Launcher, LauncherClosed, SandboxMode, SessionJail, open_launcher


def _fake_bwrap(tmp_path: Path, body: str) -> str:
    """A ``bwrap`` that answers ``--version`` and otherwise runs ``body`` (sh)."""
    path = tmp_path / "bwrap"
    path.write_text(f'#!/bin/sh\nif [ "$1" = "--version" ]; then echo "bubblewrap 0.0-fake"; exit 0; fi\n{body}\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


async def _status(bwrap: str):
    async with open_launcher(SandboxConfig(bwrap=bwrap)) as launcher:
        return launcher.status


class TestDiagnosis:
    """Each known failure is reported with its step and the advice for it."""

    @pytest.mark.parametrize(
        ("message", "step", "advice"),
        [
            ("bwrap: loopback: Failed RTM_NEWADDR: Operation not permitted", "loopback", "AppArmor"),
            ("bwrap: Failed to make / slave: Permission denied", "mount namespace", "container"),
            ("bwrap: No permissions to create new namespace", "user namespace", "kernel.unprivileged_userns_clone"),
            ("bwrap: something else entirely", "running the jail", "sandbox.mode: full-access"),
        ],
    )  # fmt: skip
    async def test_known_failures(self, tmp_path: Path, message: str, step: str, advice: str) -> None:
        status = await _status(_fake_bwrap(tmp_path, f"echo '{message}' >&2; exit 1"))
        assert not status.available
        assert (status.source, status.version, status.error) == ("config", "bubblewrap 0.0-fake", message)
        assert step in (status.failed_step or "")
        assert advice in (status.advice or "") and "sandbox.mode: full-access" in (status.advice or "")

    async def test_missing_bwrap(self, tmp_path: Path) -> None:
        status = await _status(str(tmp_path / "nowhere" / "bwrap"))
        assert not status.available and status.failed_step == "running bwrap"
        assert "sandbox.bwrap" in (status.advice or "")


class TestProcRefused:
    """Where a new /proc is refused the jail runs with an empty one, and says so."""

    async def test_retry_without_proc(self, tmp_path: Path, launcher: Launcher) -> None:
        if not launcher.status.available or launcher.status.bwrap is None:
            pytest.skip("no jail can run here")
        real = launcher.status.bwrap
        body = (
            'for arg in "$@"; do if [ "$arg" = "--proc" ]; then '
            "echo \"bwrap: Can't mount proc on /newroot/proc: Operation not permitted\" >&2; exit 1; fi; done\n"
            f'exec {real} "$@"'
        )
        async with open_launcher(SandboxConfig(bwrap=_fake_bwrap(tmp_path, body))) as degraded:
            assert degraded.status.available and degraded.status.mounts_proc is False
            policy = policy_for(SandboxMode.WORKSPACE_WRITE, tmp_path)
            code, output = await run(degraded, policy, f"ls -A /proc | wc -l; cat /proc/{os.getpid()}/environ || true")
        assert output.splitlines()[0] == "0"


class TestRefusal:
    """Where no jail can run a jailed session's process is refused, naming sandbox.mode; full-access still runs."""

    async def test_jailed_refused_full_access_runs(self, tmp_path: Path) -> None:
        async with open_launcher(SandboxConfig(bwrap=_fake_bwrap(tmp_path, "exit 1"))) as broken:
            jailed = SessionJail(policy_for(SandboxMode.WORKSPACE_WRITE, tmp_path), broken)
            with pytest.raises(JailUnavailable, match="sandbox.mode"):
                await jailed.spawn(["true"], cwd=str(tmp_path), env=BASE_ENV)
            free = SessionJail(policy_for(SandboxMode.FULL_ACCESS, tmp_path), broken)
            process = await free.spawn(["bash", "-c", "echo ran"], cwd=str(tmp_path), env=BASE_ENV)
            assert await finish(process) == (0, "ran\n")

    async def test_no_launcher(self, tmp_path: Path) -> None:
        with pytest.raises(JailUnavailable, match="sandbox.mode"):
            await SessionJail(policy_for(SandboxMode.READ_ONLY, tmp_path)).spawn(["true"], cwd=str(tmp_path), env={})

    async def test_closed_launcher(self, tmp_path: Path) -> None:
        launcher = Launcher(SandboxConfig())
        launcher.start()
        launcher.close()
        with pytest.raises(LauncherClosed):
            await launcher.spawn(["true"], policy=policy_for(SandboxMode.FULL_ACCESS, tmp_path), cwd=str(tmp_path), env={})


class TestRealPreflight:
    """On this machine the wheel's bwrap runs every option."""

    async def test_wheel(self, launcher: Launcher) -> None:
        status = launcher.status
        if not status.available:
            pytest.skip(f"no jail can run here: {status.error}")
        assert status.source in ("wheel", "system") and status.version and status.version.startswith("bubblewrap")
        assert status.error is None and status.failed_step is None
