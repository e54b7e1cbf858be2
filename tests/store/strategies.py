"""Hypothesis strategies for messages in every shape the store must round-trip."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

json_scalars = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=30)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=12,
)
text_part = st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=40)})
image_part = st.fixed_dictionaries({"type": st.just("image_url"), "image_url": st.fixed_dictionaries({"url": st.text(max_size=20)})})
content = st.none() | st.text(max_size=80) | st.lists(text_part | image_part, max_size=3)
tool_call = st.fixed_dictionaries(
    {
        "id": st.text(min_size=1, max_size=12),
        "type": st.just("function"),
        "function": st.fixed_dictionaries({"name": st.text(min_size=1, max_size=12), "arguments": st.text(max_size=40)}),
    },
    optional={"extra_content": json_values},
)
known_optional: dict[str, Any] = {
    "content": content,
    "tool_calls": st.none() | st.lists(tool_call, max_size=3),
    "tool_call_id": st.none() | st.text(max_size=12) | st.integers(),
    "name": st.none() | st.text(max_size=12),
    "tool_name": st.text(max_size=12),
    "finish_reason": st.none() | st.sampled_from(["stop", "length", "tool_calls"]),
    "reasoning": st.none() | st.text(max_size=40) | json_values,
}
_known = {"role", *known_optional}
extras = st.dictionaries(st.text(max_size=12).filter(lambda k: k not in _known), json_values, max_size=3)
messages = st.builds(
    lambda base, more: {**base, **more},
    st.fixed_dictionaries({"role": st.sampled_from(["system", "user", "assistant", "tool"])}, optional=known_optional),
    extras,
)
