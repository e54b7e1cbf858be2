"""The daemon's jail as the operator sees it: the start-up log lines and the ``status`` reply's part."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import attrs

from config.sandbox import SandboxConfig
from messages.control import JailReport

if TYPE_CHECKING:
    from tools.jail.launcher import JailStatus

__all__ = ["jail_report", "log_jail_status"]

log = logging.getLogger("hermes_actors.daemon")


def jail_report(config: SandboxConfig, status: JailStatus) -> JailReport:
    """The ``sandbox`` part of the status reply: the configured modes and what the preflight found."""
    # The same fields as JailStatus: messages import nothing of ours, so the wire class repeats them.
    return JailReport(mode=config.mode, max_mode=config.max_mode, **attrs.asdict(status))


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
    # The launcher's own error line says which step failed and what to do; this one says what it means.
    log.error(
        "without a jail every session that is not full-access refuses to start processes "
        "(sandbox.mode: %s, sandbox.max_mode: %s)", config.mode, config.max_mode,
    )
