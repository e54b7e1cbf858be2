"""Fixtures of the terminal tests: every test taking ``jails`` runs jailed and in full-access."""

from tests.jail.fixtures import hostile_jails, jails, launcher

__all__ = ["hostile_jails", "jails", "launcher"]
