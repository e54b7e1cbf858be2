"""Fixtures of the terminal-client tests: a real daemon and the scripted provider."""

from tests.daemon.conftest import daemon, home, provider, shared_daemon

__all__ = ["daemon", "home", "provider", "shared_daemon"]
