"""What ``import-hermes`` took, changed and left, each with its reason: printed as text or JSON."""

from __future__ import annotations

import json
from typing import Any, Literal

import attrs

__all__ = ["Outcome", "Report"]

Outcome = Literal["took", "changed", "left"]


@attrs.frozen
class _Entry:
    outcome: Outcome
    item: str
    detail: str


@attrs.define
class Report:
    """The import's findings, in the order they were made.

    Attributes:
        source: the Hermes home read.
        home: the hermes-actors home written (or that would be, with ``dry_run``).
        dry_run: nothing was written.
        refused: something was left because ours exists and ``--force`` was not given (exit status 1).
    """

    source: str
    home: str
    dry_run: bool
    refused: bool = False
    entries: list[_Entry] = attrs.Factory(list)

    def took(self, item: str, detail: str = "") -> None:
        """``item`` was imported as it is."""
        self.entries.append(_Entry("took", item, detail))

    def changed(self, item: str, detail: str) -> None:
        """``item`` was imported in another form (``detail`` says which)."""
        self.entries.append(_Entry("changed", item, detail))

    def left(self, item: str, detail: str, *, refused: bool = False) -> None:
        """``item`` was not imported, for the reason ``detail``; ``refused`` when ``--force`` would take it."""
        self.entries.append(_Entry("left", item, detail))
        self.refused = self.refused or refused

    def to_json(self) -> dict[str, Any]:
        """The stable JSON form of ``--json``."""
        grouped: dict[str, list[dict[str, str]]] = {"took": [], "changed": [], "left": []}
        for entry in self.entries:
            grouped[entry.outcome].append({"item": entry.item, "detail": entry.detail})
        return {"source": self.source, "home": self.home, "dry_run": self.dry_run, **grouped}

    def text(self) -> str:
        """The report for a person: a heading per outcome, one line per item."""
        verb = "would import" if self.dry_run else "imported"
        lines = [f"{verb} {self.source} into {self.home}"]
        headings = {"took": "took", "changed": "changed", "left": "left"}
        if self.dry_run:
            headings = {"took": "would take", "changed": "would change", "left": "would leave"}
        for outcome in ("took", "changed", "left"):
            entries = [e for e in self.entries if e.outcome == outcome]
            if entries:
                lines.append(f"{headings[outcome]} ({len(entries)}):")
                lines += [f"  {e.item}" + (f": {e.detail}" if e.detail else "") for e in entries]
        if self.refused:
            lines.append("some of ours exist already: run again with --force to replace them (each is backed up first)")
        return "\n".join(lines)

    def dumps(self) -> str:
        """``to_json`` as one line of JSON."""
        return json.dumps(self.to_json(), ensure_ascii=False)
