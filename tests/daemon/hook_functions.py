"""Python hooks a test daemon's config.yaml names (``hooks.<event>[].python``)."""

from __future__ import annotations

from typing import Any


def crash(**fields: Any) -> None:
    """A hook with a bug: it raises on every call."""
    raise RuntimeError("the hook broke")
