"""The configuration's one error, in a module light enough for every CLI command to import."""

from __future__ import annotations

__all__ = ["ConfigError"]


class ConfigError(ValueError):
    """The configuration file is unreadable or holds a bad value; the text names key and file."""
