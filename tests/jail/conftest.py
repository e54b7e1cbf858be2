"""Fixtures of the jail tests: the daemon-wide launcher (real bwrap)."""

from tests.jail.fixtures import jails, launcher

__all__ = ["jails", "launcher"]
