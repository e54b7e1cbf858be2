"""Validators shared by every section of ``config.yaml``.

Each error names the key, says what was expected and shows what was given
(``timeout must be a number > 0, got -1``); the loader adds the section and
the file. A bool is never a number here: YAML's ``true`` is not 1. A value of
the wrong type raises ``TypeError``, one out of range ``ValueError``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
from attrs import validators as v

__all__ = [
    "Validator",
    "integer",
    "non_empty_str",
    "non_negative_number",
    "number",
    "on_off",
    "optional_str",
    "positive_int",
    "positive_number",
    "str_tuple",
]

Validator = Callable[[Any, "attrs.Attribute[Any]", Any], None]


def _bounded(kind: str, types: tuple[type, ...], gt: float | None, ge: float | None, le: float | None) -> Validator:
    """A validator for a value of ``types`` (never a bool) within the bounds given."""
    checks: list[tuple[str, Callable[[Any], bool]]] = []
    if gt is not None:
        checks.append((f"> {gt:g}", lambda x: x > gt))
    if ge is not None:
        checks.append((f">= {ge:g}", lambda x: x >= ge))
    if le is not None:
        checks.append((f"<= {le:g}", lambda x: x <= le))
    expected = f"{kind} " + " and ".join(text for text, _ in checks)

    def check(instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, types):
            raise TypeError(f"{attribute.name} must be {kind}, got {value!r}")
        if not all(test(value) for _, test in checks):
            raise ValueError(f"{attribute.name} must be {expected}, got {value!r}")

    return check


def number(*, gt: float | None = None, ge: float | None = None, le: float | None = None) -> Validator:
    """A real number (an int or a float) within the bounds: ``gt`` and ``ge`` below, ``le`` above."""
    return _bounded("a number", (int, float), gt, ge, le)


def integer(*, gt: int | None = None, ge: int | None = None, le: int | None = None) -> Validator:
    """An int within the bounds: ``gt`` and ``ge`` below, ``le`` above."""
    return _bounded("an integer", (int,), gt, ge, le)


positive_number = number(gt=0)
"""A number > 0 (seconds, mostly)."""

non_negative_number = number(ge=0)
"""A number >= 0 (a grace period that may be none)."""

positive_int = integer(gt=0)
"""An integer > 0 (counts and sizes)."""

optional_str = v.optional(v.instance_of(str))
"""A string or None (unset)."""

non_empty_str = v.and_(v.instance_of(str), v.min_len(1))
"""A string of at least one character (a name, a command)."""

str_tuple = v.deep_iterable(member_validator=v.instance_of(str), iterable_validator=v.instance_of(tuple))
"""A tuple of strings (YAML lists are converted to tuples by the field's converter)."""


def on_off(value: object) -> object:
    """A converter: YAML's ``true`` and ``false`` as ``on`` and ``off``; anything else as it is (for the validator)."""
    if isinstance(value, bool):
        return "on" if value else "off"
    return value
