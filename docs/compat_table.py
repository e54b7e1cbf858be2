"""The "Config keys" table of ``docs/HERMES_COMPAT.md``: its default columns, written from the pinned facts.

    python docs/compat_table.py --write    # rewrite the two default columns in place
    python docs/compat_table.py            # exit status 1 when the file is not what --write would make

Each row's key, status and notes are written by hand. Its "Hermes 0.19.0" and "ours" cells are not: the
first is the default Hermes Agent 0.19.0 ships (``tests/fixtures/hermes_0_19/``, pinned from its wheel by
``docs/hermes_pin/pin.py``), the second the default of this project's ``config.loader.Config``. A Hermes
key read at one of ours (``config.hermes.HERMES_SYNONYMS``) or an old name of ours
(``config.aliases.DEPRECATED_KEYS``) shows the default of the key it is read as. ``—`` marks a key with no
single default on that side (a section, a pattern, or a key that side does not have).
``tests/config/test_compat_table.py`` fails when the file differs from what this writes.
"""

from __future__ import annotations

import json
import re
import sys
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: the project's packages sit beside docs/
    sys.path.insert(0, str(ROOT))

from config.aliases import DEPRECATED_KEYS  # noqa: E402
from config.hermes import HERMES_SYNONYMS  # noqa: E402
from config.loader import Config  # noqa: E402

__all__ = [
    "COMPAT",
    "FIXTURES",
    "NO_DEFAULT",
    "Row",
    "TableError",
    "hermes_defaults",
    "our_defaults",
    "parse_rows",
    "read_as",
    "render",
    "same_default",
]

COMPAT = ROOT / "docs" / "HERMES_COMPAT.md"
FIXTURES = ROOT / "tests" / "fixtures" / "hermes_0_19"
SECTION = "## Config keys"
HEADER = "| key | status | Hermes 0.19.0 | ours | notes |\n| --- | --- | --- | --- | --- |\n"
NO_DEFAULT = "—"
_MAX_CELL = 40
# A cell boundary: a pipe that a value escaped (``\|``) is not one.
_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_KEY_CELL = re.compile(r"^`([^`]+)`")


class TableError(ValueError):
    """The config-keys section of the compatibility document cannot be read as a table."""


@attrs.frozen
class Row:
    """One row of the table: the hand-written cells, and the key its first cell names."""

    key_cell: str
    status: str
    notes: str

    @property
    def key(self) -> str:
        """The dotted key (or pattern: ``terminal.docker_*``, ``x_search.*``) the first cell names."""
        match = _KEY_CELL.match(self.key_cell)
        if match is None:
            raise TableError(f"a row's first cell does not start with a `key`: {self.key_cell!r}")
        return match.group(1)

    @property
    def hermes_only(self) -> bool:
        """Marked "(Hermes)": a key of Hermes's that this project does not have under that name."""
        return "(Hermes" in self.key_cell


def parse_rows(text: str) -> list[Row]:
    """The rows of the config-keys table in ``text`` (the whole document).

    Raises:
        TableError: no such section, or a row with neither three nor five cells.
    """
    _, section = _split(text)
    lines = section.splitlines(keepends=True)
    start, end = _table_span(lines)
    return [row for row in map(_parse_line, lines[start:end]) if row is not None]


def render(text: str, hermes: Mapping[str, Any], ours: Mapping[str, Any]) -> str:
    """``text`` (the whole document) with the table's default columns written from ``hermes`` and ``ours``.

    Raises:
        TableError: as :func:`parse_rows`.
    """
    before, section = _split(text)
    lines = section.splitlines(keepends=True)
    start, end = _table_span(lines)
    rows = [row for row in map(_parse_line, lines[start:end]) if row is not None]
    body = "".join(_render_row(row, hermes, ours) for row in rows)
    return before + "".join(lines[:start]) + HEADER + body + "".join(lines[end:])


def hermes_defaults(fixtures: Path = FIXTURES) -> dict[str, Any]:
    """Every Hermes 0.19.0 key with a pinned default: ``DEFAULT_CONFIG``, the CLI's own, each platform's."""
    defaults = json.loads((fixtures / "config_defaults.json").read_text(encoding="utf-8"))["defaults"]
    extra = json.loads((fixtures / "config_extra_keys.json").read_text(encoding="utf-8"))
    merged = {**extra["cli_defaults"], **defaults}
    for platform in extra["platforms"]:
        for field, value in extra["platform_fields"].items():
            merged[f"platforms.{platform}.{field}"] = value
    return merged


def our_defaults(cls: type = Config, instance: Any = None, prefix: str = "") -> dict[str, Any]:
    """Every dotted leaf key of ``cls`` (attrs sections walked into) and its default."""
    instance = cls() if instance is None else instance
    hints = typing.get_type_hints(cls)
    found: dict[str, Any] = {}
    for field in attrs.fields(cls):
        value = getattr(instance, field.name)
        if attrs.has(hints[field.name]):
            found.update(our_defaults(hints[field.name], value, f"{prefix}{field.name}."))
        else:
            found[f"{prefix}{field.name}"] = value
    return found


def same_default(hermes: Any, ours: Any) -> bool:
    """Whether two defaults mean the same: numbers by value, lists and tuples alike, Hermes's ``""`` as unset."""
    if hermes == "" and ours is None:
        return True
    if isinstance(hermes, bool) or isinstance(ours, bool):
        return type(hermes) is type(ours) and hermes == ours
    if isinstance(hermes, (list, tuple)) and isinstance(ours, (list, tuple)):
        return len(hermes) == len(ours) and all(same_default(h, o) for h, o in zip(hermes, ours))
    return bool(hermes == ours)


def read_as(key: str) -> str:
    """The key of ours that ``key`` is read at: a Hermes synonym's or an old name's new key, else itself."""
    return HERMES_SYNONYMS.get(key) or DEPRECATED_KEYS.get(key) or key


def _render_row(row: Row, hermes: Mapping[str, Any], ours: Mapping[str, Any]) -> str:
    cells = [row.key_cell, row.status, _cell(hermes, row.key), _cell(ours, read_as(row.key)), row.notes]
    return ("| " + " | ".join(cells) + " |").replace("  |", " |") + "\n"


def _cell(defaults: Mapping[str, Any], key: str) -> str:
    """The default of ``key`` as a table cell: compact JSON, cut to a readable length."""
    if key not in defaults:
        return NO_DEFAULT
    text = json.dumps(_plain(defaults[key]), ensure_ascii=False, separators=(", ", ": "))
    if len(text) > _MAX_CELL:
        text = text[: _MAX_CELL - 1] + "…"
    return "`" + text.replace("|", "\\|") + "`"


def _plain(value: Any) -> Any:
    """``value`` as JSON writes it, a whole float as an integer (Hermes's ``180`` is our ``180.0``)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if attrs.has(type(value)):
        return _plain(attrs.asdict(value))
    return value


def _split(text: str) -> tuple[str, str]:
    """The document before the config-keys section, and the section to the end (it is the last one)."""
    head, found, rest = text.partition(SECTION)
    if not found:
        raise TableError(f"no {SECTION!r} section")
    return head, found + rest


def _table_span(lines: list[str]) -> tuple[int, int]:
    """Where the section's table starts and ends, as indices of ``lines``."""
    start = next((i for i, line in enumerate(lines) if line.startswith("| ")), None)
    if start is None:
        raise TableError(f"no table under {SECTION!r}")
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("| ")), len(lines))
    return start, end


def _parse_line(line: str) -> Row | None:
    """The row a table line holds; None for the header and its rule."""
    cells = [cell.strip() for cell in _CELL_SPLIT.split(line.strip()[1:-1])]
    if len(cells) == 5:
        cells = [cells[0], cells[1], cells[4]]
    if len(cells) != 3:
        raise TableError(f"a row has {len(cells)} cells (3 or 5 expected): {line.strip()}")
    key, status, notes = cells
    return None if key in ("key", "---") else Row(key, status, notes)


def main(argv: list[str]) -> int:
    """Write (``--write``) or check the table's default columns; 1 when a check finds the file stale."""
    text = COMPAT.read_text(encoding="utf-8")
    fresh = render(text, hermes_defaults(), our_defaults())
    if "--write" in argv:
        COMPAT.write_text(fresh, encoding="utf-8")
        return 0
    if fresh != text:
        print(f"{COMPAT} is stale: run python docs/compat_table.py --write", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
