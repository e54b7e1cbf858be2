"""Fixtures of the terminal tests: every test taking ``jails`` runs jailed and in full-access."""

from tests.jail.fixtures import jails, launcher

__all__ = ["jails", "launcher"]
