"""Hypothesis strategies: well-formed internal (OpenAI-style) histories."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40)
_args = st.dictionaries(st.sampled_from(["command", "path", "n"]), st.one_of(_text, st.integers()), max_size=3)


@st.composite
def histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A system prompt (maybe), then user turns each answered by tool rounds and a final answer."""
    messages: list[dict[str, Any]] = []
    if draw(st.booleans()):
        messages.append({"role": "system", "content": draw(_text)})
    call_no = 0
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        messages.append({"role": "user", "content": draw(_text)})
        for _ in range(draw(st.integers(min_value=0, max_value=3))):
            calls = []
            for _ in range(draw(st.integers(min_value=1, max_value=3))):
                call_no += 1
                calls.append(
                    {
                        "id": f"call_{call_no}",
                        "type": "function",
                        "function": {"name": draw(st.sampled_from(["terminal", "read_file"])), "arguments": json.dumps(draw(_args))},
                    }
                )
            messages.append({"role": "assistant", "content": draw(st.one_of(st.none(), _text)), "tool_calls": calls})
            messages += [{"role": "tool", "tool_call_id": c["id"], "content": draw(_text)} for c in calls]
        messages.append({"role": "assistant", "content": draw(_text)})
    if draw(st.booleans()):
        messages.append({"role": "user", "content": draw(_text)})
    return messages
