"""Fixtures of the skills tests: ``jails`` runs a test jailed and in full-access (the terminal's)."""

from tests.jail.fixtures import jails, launcher

__all__ = ["jails", "launcher"]
