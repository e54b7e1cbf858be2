"""The shared config validators: the key, what was expected and what was given, in every error."""

from __future__ import annotations

import attrs
import pytest

from config.validators import integer, non_negative_number, number, positive_int, positive_number


@attrs.frozen
class Section:
    """A config section using each shared validator once."""

    timeout: float = attrs.field(default=1.0, validator=positive_number)
    grace: float = attrs.field(default=0.0, validator=non_negative_number)
    workers: int = attrs.field(default=1, validator=positive_int)
    depth: int = attrs.field(default=1, validator=integer(ge=1, le=3))
    ratio: float = attrs.field(default=0.5, validator=number(gt=0, le=1))


class TestBounds:
    """A value out of range is a ValueError naming the key, the bounds and the value."""

    @pytest.mark.parametrize(
        ("field", "value", "message"),
        [
            ("timeout", 0, "timeout must be a number > 0, got 0"),
            ("grace", -0.5, "grace must be a number >= 0, got -0.5"),
            ("workers", 0, "workers must be an integer > 0, got 0"),
            ("depth", 4, "depth must be an integer >= 1 and <= 3, got 4"),
            ("ratio", 1.5, "ratio must be a number > 0 and <= 1, got 1.5"),
        ],
    )
    def test_out_of_range(self, field: str, value: object, message: str) -> None:
        with pytest.raises(ValueError) as caught:
            Section(**{field: value})
        assert message == str(caught.value)

    def test_bounds_are_inclusive_where_said(self) -> None:
        section = Section(grace=0, depth=3, ratio=1, timeout=0.001)
        assert (section.grace, section.depth, section.ratio) == (0, 3, 1)


class TestTypes:
    """A value of the wrong type, a bool included, is a TypeError naming the key."""

    @pytest.mark.parametrize(
        ("field", "value", "message"),
        [
            ("timeout", True, "timeout must be a number, got True"),
            ("timeout", "5", "timeout must be a number, got '5'"),
            ("workers", 1.5, "workers must be an integer, got 1.5"),
            ("depth", False, "depth must be an integer, got False"),
        ],
    )
    def test_wrong_type(self, field: str, value: object, message: str) -> None:
        with pytest.raises(TypeError) as caught:
            Section(**{field: value})
        assert message == str(caught.value)
