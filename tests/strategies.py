"""Hypothesis strategies shared by the suite (one module, per the style guide)."""

from __future__ import annotations

import enum
import types
import typing
from typing import Any

import attrs
from hypothesis import strategies as st

#: Any JSON value, as a message's free-form payload field may hold.
json_values: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)


def for_type(tp: Any, _depth: int = 0) -> st.SearchStrategy[Any]:
    """A strategy for a message field type: attrs classes, unions, enums,
    lists, dicts, scalars, and ``Any`` as any JSON value."""
    if tp is Any:
        return json_values
    if attrs.has(tp):
        return message_strategy(tp, _depth + 1)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return st.sampled_from(list(tp))
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return st.one_of([for_type(arg, _depth) for arg in args])
    if origin is list:
        if _depth > 2:  # keep recursive messages (a tree of nodes) finite
            return st.just([])
        return st.lists(for_type(args[0], _depth), max_size=3)
    if origin is dict:
        return st.dictionaries(for_type(args[0], _depth), for_type(args[1], _depth), max_size=3)
    if origin is tuple:
        return st.tuples(*(for_type(arg, _depth) for arg in args))
    if tp is float:
        return st.floats(allow_nan=False, allow_infinity=False)
    if tp is int:  # the codec's wire contract: integers fit in 64 bits
        return st.integers(-(2**63), 2**63 - 1)
    if tp is type(None):
        return st.none()
    return st.from_type(tp)


def message_strategy(cls: type, _depth: int = 0) -> st.SearchStrategy[Any]:
    """Instances of the attrs message class ``cls`` with every field drawn."""
    hints = typing.get_type_hints(cls)
    fields = {f.name: for_type(hints[f.name], _depth) for f in attrs.fields(cls) if f.init}
    return st.builds(cls, **fields)
