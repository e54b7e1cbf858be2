"""Fixtures of the end-to-end approval tests: a fresh home, the scripted provider, a daemon started on demand."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.daemon.conftest import home, provider
from tests.daemon.helpers import DaemonProcess
from tests.approvals.helpers import write_config

__all__ = ["home", "provider", "start_daemon"]


@pytest.fixture
def start_daemon(home: Path) -> Iterator[Callable[[str], DaemonProcess]]:
    """Starts a daemon in ``home`` with a ``config.yaml`` (again after a stop); every one is stopped after the test."""
    started: list[DaemonProcess] = []

    def start(config: str = "") -> DaemonProcess:
        if config:
            write_config(home, config)
        daemon = DaemonProcess(home).start()
        started.append(daemon)
        return daemon

    try:
        yield start
    finally:
        for daemon in started:
            daemon.stop()
