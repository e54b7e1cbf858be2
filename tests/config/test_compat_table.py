"""docs/HERMES_COMPAT.md's "Config keys" table is generated where it can be and true to Hermes Agent 0.19.0.

The truth about Hermes is the pinned fixtures of ``tests/fixtures/hermes_0_19/`` (from its wheel): every key
a row says is Hermes's exists there, every key there has a row, and a row that calls a key the same says
why when the defaults differ. The loader's tables of Hermes keys (``HERMES_UNUSED``, ``HERMES_SYNONYMS``)
name only keys 0.19.0 has.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import pytest
import yaml

from config.aliases import DEPRECATED_KEYS
from config.hermes import HERMES_SYNONYMS
from config.hermes_keys import HERMES_UNUSED
from config.loader import config_warnings, load_config
from docs.compat_table import (
    COMPAT,
    FIXTURES,
    Row,
    hermes_defaults,
    our_defaults,
    parse_rows,
    read_as,
    render,
    same_default,
)

REFRESH = "run python docs/compat_table.py --write"
# What a row called the same says when its default is not Hermes's.
REASONS = ("differs by design", "same default, spelled differently")


def _rows() -> list[Row]:
    return parse_rows(COMPAT.read_text(encoding="utf-8"))


def _fixture(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def _hermes_keys() -> set[str]:
    """Every dotted key Hermes 0.19.0 reads, as pinned: its defaults, top-level extras, platforms, model."""
    extra = _fixture("config_extra_keys.json")
    keys = set(hermes_defaults()) | set(extra["root_keys"]) | {f"model.{key}" for key in extra["model_keys"]}
    for key, where in extra["platform_shared_keys"].items():
        keys |= {f"platforms.{p}.{key}" for p in extra["platforms"] if where == ["*"] or p in where}
    return keys


def _free_form(defaults: dict[str, Any]) -> set[str]:
    """Hermes keys whose default is an empty mapping: anything may sit under them (``providers.NAME...``)."""
    return {key for key, value in defaults.items() if value == {}}


def _exists(pattern: str, keys: Iterable[str], free_form: Iterable[str]) -> bool:
    """Whether Hermes has ``pattern``: it names a key or section of ``keys``, or lies below a free-form key."""
    below = pattern.removesuffix(".*")
    return any(below.startswith(f"{key}.") for key in free_form) or any(_covers(f"{below}.*", key) for key in keys)


def _covers(row: str, key: str) -> bool:
    """Whether the row ``row`` names ``key``: the key itself (segment globs), or its section as ``section.*``."""
    wanted, parts = row.removesuffix(".*").split("."), key.split(".")
    if len(wanted) > len(parts) or (not row.endswith(".*") and len(wanted) < len(parts)):
        return False
    return all(fnmatchcase(p, w) for p, w in zip(parts, wanted))


def _uncovered(keys: Iterable[str], rows: Iterable[str]) -> list[str]:
    """The keys no row names."""
    rows = list(rows)
    return sorted(key for key in keys if not any(_covers(row, key) for row in rows))


def _claims_hermes(row: Row) -> bool:
    """A row about a key of Hermes's: marked "(Hermes)", or one of ours said to be the same as Hermes's."""
    return row.hermes_only or (row.status.startswith("same") and not row.status.startswith("same setting"))


def _differences(rows: Iterable[Row], hermes: dict[str, Any], ours: dict[str, Any]) -> dict[str, bool]:
    """Rows called the same whose default is not Hermes's -> whether the row says why."""
    found = {}
    for row in rows:
        ours_at = read_as(row.key)
        if not row.status.startswith("same") or row.key not in hermes or ours_at not in ours:
            continue
        if not same_default(hermes[row.key], ours[ours_at]):
            found[row.key] = any(reason in f"{row.status} {row.notes}".lower() for reason in REASONS)
    return found


def _nested(dotted: dict[str, Any]) -> dict[str, Any]:
    """A config document holding each dotted key of ``dotted`` at its place."""
    document: dict[str, Any] = {}
    for key, value in dotted.items():
        *sections, leaf = key.split(".")
        node = document
        for section in sections:
            node = node.setdefault(section, {})
        node[leaf] = value
    return document


class TestGeneratedColumns:
    """The table's default columns are what docs/compat_table.py writes from the fixtures and our Config."""

    def test_the_file_is_fresh(self) -> None:
        text = COMPAT.read_text(encoding="utf-8")
        assert render(text, hermes_defaults(), our_defaults()) == text, REFRESH

    def test_the_check_can_fail(self) -> None:
        text = COMPAT.read_text(encoding="utf-8")
        stale = render(text, {**hermes_defaults(), "agent.max_turns": 1234}, our_defaults())
        assert "`1234`" in stale
        assert stale != text

    def test_a_hand_written_cell_survives(self) -> None:
        text = COMPAT.read_text(encoding="utf-8")
        edited = text.replace("| `agent.max_turns` | ", "| `agent.max_turns` (edited) | ", 1)
        assert "(edited)" in render(edited, hermes_defaults(), our_defaults())


class TestRowsExist:
    """Every key a row says is Hermes's is a key of Hermes 0.19.0."""

    def test_every_hermes_row(self) -> None:
        keys, free = _hermes_keys(), _free_form(hermes_defaults())
        assert [row.key for row in _rows() if _claims_hermes(row) and not _exists(row.key, keys, free)] == []

    def test_the_check_can_fail(self) -> None:
        keys, free = {"agent.max_turns", "terminal.docker_image", "providers"}, {"providers"}
        assert _exists("terminal.docker_*", keys, free)
        assert _exists("providers.openrouter.base_url", keys, free)
        assert _exists("agent", keys, free)
        assert not _exists("agent.run_budget_seconds", keys, free)
        assert not _exists("terminal.vercel_*", keys, free)
        assert _claims_hermes(Row("`x.y` (Hermes)", "absent", ""))
        assert _claims_hermes(Row("`x.y`", "same", ""))
        assert not _claims_hermes(Row("`x.y`", "same setting, our name", ""))
        assert not _claims_hermes(Row("`x.y`", "ours", ""))


class TestEveryKeyHasARow:
    """Each config key, ours or Hermes 0.19.0's, is a row of the table (or in a section row)."""

    def test_every_key_of_ours(self) -> None:
        assert _uncovered(our_defaults(), (row.key for row in _rows())) == []

    def test_every_hermes_key(self) -> None:
        assert _uncovered(_hermes_keys(), (row.key for row in _rows())) == []

    def test_every_key_the_loader_knows(self) -> None:
        known = [*HERMES_UNUSED, *HERMES_SYNONYMS, *DEPRECATED_KEYS]
        assert _uncovered(known, (row.key for row in _rows())) == []

    def test_the_check_can_fail(self) -> None:
        rows = ["x_search.*", "bedrock", "terminal.docker_*", "terminal.default_timeout", "web.*"]
        keys = ["x_search.model", "x_search", "bedrock", "bedrock.region", "terminal.docker_image", "terminal.timeout"]
        assert _uncovered(keys, rows) == ["bedrock.region", "terminal.timeout"]


class TestSameDefaults:
    """A key called the same as Hermes's has Hermes's default, or its row says why not."""

    def test_every_same_row(self) -> None:
        differences = _differences(_rows(), hermes_defaults(), our_defaults())
        assert [key for key, why in differences.items() if not why] == []

    def test_the_check_can_fail(self) -> None:
        rows = [
            Row("`a.n`", "same", "Part E's section."),
            Row("`a.m`", "same", "differs by design: seed 002"),
            Row("`a.o`", "ours", ""),
            Row("`a.s`", "same", ""),
            Row("`a.t`", "same", "Same default, spelled differently: 0 is unset"),
        ]
        hermes = {"a.n": 90, "a.m": 90, "a.o": 90, "a.s": "", "a.t": 0}
        ours = {"a.n": 60.0, "a.m": 60, "a.o": 60, "a.s": None, "a.t": None}
        assert _differences(rows, hermes, ours) == {"a.n": False, "a.m": True, "a.t": True}

    def test_defaults_compare_by_meaning(self) -> None:
        assert same_default(180, 180.0)
        assert same_default([], ())
        assert same_default("", None)
        assert not same_default(1, True)
        assert not same_default(60, 300.0)


class TestLoaderTables:
    """The loader's Hermes keys (unused, synonyms) are all keys of Hermes 0.19.0."""

    def test_unused_keys_exist(self) -> None:
        keys, free = _hermes_keys(), _free_form(hermes_defaults())
        assert [key for key in HERMES_UNUSED if not _exists(key, keys, free)] == []

    def test_synonyms_exist(self) -> None:
        keys, free = _hermes_keys(), _free_form(hermes_defaults())
        assert [key for key in HERMES_SYNONYMS if not _exists(key, keys, free)] == []

    def test_the_check_can_fail(self) -> None:
        keys = {"agent.max_turns"}
        assert [key for key in ("agent.max_turns", "agent.verbose") if not _exists(key, keys, set())] == [
            "agent.verbose"
        ]


class TestHermesFileLoads:
    """Hermes 0.19.0's whole default config.yaml loads here: no key of it is unknown, no value an error."""

    @pytest.fixture
    def home(self, tmp_path: Path) -> Path:
        defaults = _fixture("config_defaults.json")["defaults"]
        (tmp_path / "config.yaml").write_text(yaml.safe_dump(_nested(defaults)), encoding="utf-8")
        return tmp_path

    def test_no_unknown_key(self, home: Path) -> None:
        assert [w for w in config_warnings(home) if w.startswith("unknown key")] == []

    def test_it_loads(self, home: Path) -> None:
        load_config(home, log_warnings=False)

    def test_the_check_can_fail(self, tmp_path: Path) -> None:
        (tmp_path / "config.yaml").write_text(yaml.safe_dump(_nested({"agent.not_a_hermes_key": 1})))
        assert config_warnings(tmp_path) == ["unknown key agent.not_a_hermes_key (ignored)"]
