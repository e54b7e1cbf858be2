"""Comments that cite a design decision link to an entry of docs/DECISIONS.md that exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_LINK = re.compile(r"docs/DECISIONS\.md#(d-[a-z0-9-]+)")
_ANCHOR = re.compile(r"^### (d-[a-z0-9-]+)$", re.MULTILINE)
_SOURCES = ("actors", "bench", "cli", "config", "control", "conversation", "markup", "messages", "providers", "store", "tests", "tools")


def _anchors() -> set[str]:
    return set(_ANCHOR.findall((ROOT / "docs" / "DECISIONS.md").read_text(encoding="utf-8")))


def _links() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for top in _SOURCES:
        for path in (ROOT / top).rglob("*.py"):
            for anchor in _LINK.findall(path.read_text(encoding="utf-8")):
                found.setdefault(anchor, set()).add(str(path.relative_to(ROOT)))
    return found


class TestDecisionLinks:
    """Every decision a comment links to is written down, and every decision written down is linked."""

    def test_links_name_existing_entries(self) -> None:
        """A link to a missing anchor (a typo, a renamed entry) is reported with the files that use it."""
        missing = {anchor: sorted(files) for anchor, files in _links().items() if anchor not in _anchors()}
        assert missing == {}

    def test_every_entry_is_linked(self) -> None:
        """An entry no comment links to is either stale or its code forgot to say so."""
        assert sorted(_anchors() - set(_links())) == []
