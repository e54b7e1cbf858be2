"""What the daemon says at start about its jail, and the status reply's part."""

from __future__ import annotations

import logging

import pytest

from actors.platform.daemon.jail_status import jail_report, log_jail_status
from config.sandbox import SandboxConfig
from tools.jail.preflight import JailStatus

READY = JailStatus(available=True, bwrap="/usr/bin/bwrap", source="system", version="bubblewrap 0.9.0")
BROKEN = JailStatus(
    available=False, bwrap="/usr/bin/bwrap", source="system", error="setting up uid map: Permission denied",
    failed_step="creating the jail's user namespace", advice="run 'sysctl -w kernel.unprivileged_userns_clone=1'",
)


def _records(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == level]


class TestStartLog:
    """One line says how tools will run: jailed, with the daemon's authority, or refused."""

    def test_full_access_warns(self, caplog: pytest.LogCaptureFixture) -> None:
        """sandbox.mode full-access is a warning naming the daemon's authority."""
        with caplog.at_level(logging.INFO):
            log_jail_status(SandboxConfig(mode="full-access"), READY)
        assert _records(caplog, logging.WARNING) == [
            "sandbox.mode is full-access: tools run with the daemon's authority (no jail)"
        ]

    def test_jailed_is_info(self, caplog: pytest.LogCaptureFixture) -> None:
        """A working jail is an info line with its bwrap; no warning."""
        with caplog.at_level(logging.INFO):
            log_jail_status(SandboxConfig(), READY)
        assert _records(caplog, logging.WARNING) == []
        [line] = _records(caplog, logging.INFO)
        assert "jail ready: bwrap /usr/bin/bwrap (system, bubblewrap 0.9.0)" in line and "workspace-write" in line

    def test_no_jail_is_an_error(self, caplog: pytest.LogCaptureFixture) -> None:
        """No jail: an error saying what it means for sessions, naming sandbox.mode."""
        with caplog.at_level(logging.INFO):
            log_jail_status(SandboxConfig(), BROKEN)
        [line] = _records(caplog, logging.ERROR)
        assert "refuses to start processes" in line and "sandbox.mode: workspace-write" in line


class TestStatusPart:
    """status carries the configured modes and every field of the preflight's finding."""

    def test_fields(self) -> None:
        """The failed step, error and advice pass through unchanged."""
        shown = jail_report(SandboxConfig(mode="read-only", max_mode="workspace-write"), BROKEN)
        assert (shown.mode, shown.max_mode, shown.available) == ("read-only", "workspace-write", False)
        assert (shown.failed_step, shown.error, shown.advice) == (BROKEN.failed_step, BROKEN.error, BROKEN.advice)
