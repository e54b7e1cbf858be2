"""Hypothesis strategies shared by the recovery tests."""

from __future__ import annotations

import json

from hypothesis import strategies as st

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)

json_objects = st.dictionaries(st.text(max_size=8), json_values, max_size=5)


@st.composite
def damaged_json(draw: st.DrawFn) -> str:
    """A valid arguments object with random damage: cut short, extra closers, commas, raw control characters."""
    text = json.dumps(draw(json_objects))
    damage = draw(st.sampled_from(["truncate", "closers", "comma", "control", "splice"]))
    if damage == "truncate":
        return text[: draw(st.integers(0, len(text)))]
    if damage == "closers":
        return text + draw(st.text(alphabet="}]", min_size=1, max_size=80))
    if damage == "comma":
        return text[:-1] + ",}"
    if damage == "control":
        return text.replace(" ", draw(st.sampled_from(["\n", "\t", "\x01"])))
    position = draw(st.integers(0, len(text)))
    return text[:position] + draw(st.text(alphabet='{}[]",:\\ ab1\n', max_size=10)) + text[position:]
