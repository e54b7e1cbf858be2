"""The daemon's jail as the operator sees it: the start-up log lines and the ``status`` reply's part."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from config.sandbox import SandboxConfig
from messages.control import SandboxStatus

if TYPE_CHECKING:
    from tools.jail.launcher import JailStatus

__all__ = ["log_jail_status", "sandbox_status"]

log = logging.getLogger("hermes_actors.daemon")


def sandbox_status(config: SandboxConfig, status: JailStatus) -> SandboxStatus:
    """The ``sandbox`` part of the status reply: the configured modes and what the preflight found."""
    return SandboxStatus(
        mode=config.mode,
        max_mode=config.max_mode,
        available=status.available,
        bwrap=status.bwrap,
        source=status.source,
        version=status.version,
        mounts_proc=status.mounts_proc,
        error=status.error,
        failed_step=status.failed_step,
        advice=status.advice,
    )


def log_jail_status(config: SandboxConfig, status: JailStatus) -> None:
    """Say at start how tools will run: jailed (and by which bwrap), with full access, or refused."""
    if config.mode == "full-access":
        log.warning("sandbox.mode is full-access: tools run with the daemon's authority (no jail)")
    if status.available:
        log.info(
            "jail ready: bwrap %s (%s, %s)%s; sessions run %s (at most %s)",
            status.bwrap, status.source, status.version or "version unknown",
            "" if status.mounts_proc else ", without its own /proc mount", config.mode, config.max_mode,
        )
        return
    log.error(
        "no jail can run (failed at %s: %s). %s Until then every session that is not full-access refuses "
        "to start processes (sandbox.mode: %s).",
        status.failed_step or "preflight", status.error or "unknown error", status.advice or "", config.mode,
    )
