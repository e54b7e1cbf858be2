"""Deprecated config keys are read under their new names, with a warning naming the new key."""

from __future__ import annotations

import pytest

from config import aliases
from config.aliases import apply_deprecated_keys


@pytest.fixture
def renamed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(aliases, "DEPRECATED_KEYS", {"a.old": "a.new", "b.deep.old": "c.new"})


@pytest.mark.usefixtures("renamed")
class TestApplyDeprecatedKeys:
    def test_an_old_key_moves_to_its_new_place_with_a_warning(self) -> None:
        found: list[str] = []
        data = {"a": {"old": 5, "other": 1}}
        assert apply_deprecated_keys(data, found) == {"a": {"new": 5, "other": 1}}
        assert found == ["deprecated key a.old: use a.new (read as a.new this time)"]
        assert data == {"a": {"old": 5, "other": 1}}, "the caller's mapping is left alone"

    def test_the_new_key_wins_when_both_are_set(self) -> None:
        found: list[str] = []
        assert apply_deprecated_keys({"a": {"old": 5, "new": 7}}, found) == {"a": {"new": 7}}
        assert found == ["deprecated key a.old ignored: a.new is set too"]

    def test_a_key_may_move_to_another_section(self) -> None:
        found: list[str] = []
        assert apply_deprecated_keys({"b": {"deep": {"old": "x"}}}, found) == {"c": {"new": "x"}}, "emptied sections go"
        assert len(found) == 1

    def test_nothing_deprecated_means_no_change_and_no_warning(self) -> None:
        found: list[str] = []
        assert apply_deprecated_keys({"a": {"new": 1}, "b": 3}, found) == {"a": {"new": 1}, "b": 3}
        assert found == []
