"""Fixtures of the tool tests: the run's launcher (real bwrap), for tools that start processes."""

from tests.jail.fixtures import launcher

__all__ = ["launcher"]
