"""Fixtures of the daemon tests: a real daemon in a temporary home."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess
from tests.platform.discord_fake import FakeDiscord, fake_discord
from tests.platform.matrix_fake import FakeMatrix, fake_matrix
from tests.platform.mattermost_fake import FakeMattermost, fake_mattermost
from tests.platform.signal_fake import FakeSignal, fake_signal
from tests.platform.slack_fake import FakeSlack, fake_slack
from tests.platform.telegram_fake import FakeTelegram, fake_telegram
from tests.platform.whatsapp_fake import FakeGraph, fake_graph


@pytest.fixture
def home() -> Iterator[Path]:
    """A fresh HERMES_ACTORS_HOME with a short path (so the usual socket path fits)."""
    with tempfile.TemporaryDirectory(prefix="ha-") as base:
        yield Path(base) / "home"


@pytest.fixture
def daemon(home: Path) -> Iterator[DaemonProcess]:
    """A running daemon; stopped (and checked gone) after the test."""
    running = DaemonProcess(home).start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def shared_daemon() -> Iterator[DaemonProcess]:
    """One daemon for a module's read-mostly tests."""
    with tempfile.TemporaryDirectory(prefix="ha-") as base:
        running = DaemonProcess(Path(base) / "home").start()
        try:
            yield running
        finally:
            running.stop()


@pytest.fixture(scope="module")
def provider() -> Iterator[ScriptedProviderProcess]:
    """The scripted provider in rule mode, for a module's tests."""
    server = ScriptedProviderProcess()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def telegram() -> Iterator[FakeTelegram]:
    """The fake Telegram Bot API, running on loopback."""
    with fake_telegram() as fake:
        yield fake


@pytest.fixture
def discord() -> Iterator[FakeDiscord]:
    """The fake Discord (REST and Gateway), running on loopback."""
    with fake_discord() as fake:
        yield fake


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    """The fake Slack (Web API and Socket Mode), running on loopback."""
    with fake_slack() as fake:
        yield fake


@pytest.fixture
def matrix() -> Iterator[FakeMatrix]:
    """The fake Matrix homeserver, running on loopback."""
    with fake_matrix() as fake:
        yield fake


@pytest.fixture
def mattermost() -> Iterator[FakeMattermost]:
    """The fake Mattermost (REST and WebSocket), running on loopback."""
    with fake_mattermost() as fake:
        yield fake


@pytest.fixture
def signal() -> Iterator[FakeSignal]:
    """The fake signal-cli daemon (its HTTP endpoint), running on loopback."""
    with fake_signal() as fake:
        yield fake


@pytest.fixture
def graph() -> Iterator[FakeGraph]:
    """The fake Graph API of WhatsApp's Cloud API, running on loopback."""
    with fake_graph() as fake:
        yield fake
