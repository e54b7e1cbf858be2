"""docs/HERMES_COMPAT.md has a row for every config key of ours and every Hermes key we know of."""

from __future__ import annotations

import re
import typing
from collections.abc import Iterator
from pathlib import Path

import attrs

from config.aliases import DEPRECATED_KEYS
from config.hermes import HERMES_SYNONYMS
from config.hermes_keys import HERMES_UNUSED
from config.loader import Config

COMPAT = Path(__file__).parents[2] / "docs" / "HERMES_COMPAT.md"


def _table_keys() -> set[str]:
    """The first cell of each row of the "Config keys" table, without backticks and the "(Hermes)" mark."""
    section = COMPAT.read_text(encoding="utf-8").split("## Config keys", 1)[1]
    return {m.group(1) for m in re.finditer(r"^\| `([^`]+)`", section, re.MULTILINE)}


def _our_keys(cls: type, prefix: str = "") -> Iterator[str]:
    """Every dotted leaf key of ``cls`` (attrs sections are walked into)."""
    hints = typing.get_type_hints(cls)
    for field in attrs.fields(cls):
        if attrs.has(hints[field.name]):
            yield from _our_keys(hints[field.name], f"{prefix}{field.name}.")
        else:
            yield f"{prefix}{field.name}"


def _covered(key: str, rows: set[str]) -> bool:
    """A row names the key, or one of its leading parts as ``part.*`` or as the whole section."""
    parts = key.split(".")
    return key in rows or any(".".join(parts[:end]) + ".*" in rows for end in range(1, len(parts)))


class TestCompatTable:
    """Each config key, ours or Hermes's, is a row of the compatibility table."""

    def test_every_key_of_ours(self) -> None:
        rows = _table_keys()
        assert [key for key in _our_keys(Config) if not _covered(key, rows)] == []

    def test_every_hermes_key_we_know(self) -> None:
        rows = _table_keys()
        known = [*HERMES_UNUSED, *HERMES_SYNONYMS, *DEPRECATED_KEYS]
        assert [key for key in known if not _covered(key, rows)] == []

    def test_the_check_can_fail(self) -> None:
        assert not _covered("terminal.timeout", {"terminal.default_timeout", "web.*"})
        assert _covered("sandbox.mode", {"sandbox.*"})
