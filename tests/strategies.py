"""Hypothesis strategies shared by the suite (one module, per the style guide).

The second half is hostile input: text and frames that have broken decoders
and encoders somewhere (lone surrogates, controls, bidi overrides, deep
nesting, huge integers, invalid UTF-8), for every test of a boundary.
"""

from __future__ import annotations

import enum
import types
import typing
from typing import Any

import attrs
from hypothesis import strategies as st

from tests.tools.secret_samples import KINDS, make_sample

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


def for_type(tp: Any, _depth: int = 0, text: st.SearchStrategy[str] | None = None) -> st.SearchStrategy[Any]:
    """A strategy for a message field type: attrs classes, unions, enums,
    lists, dicts, scalars, and ``Any`` as any JSON value.

    ``text``, when given, draws every string (keys and free-form JSON included).
    """
    if tp is Any:
        return json_values if text is None else hostile_json_values(text)
    if tp is str and text is not None:
        return text
    if attrs.has(tp):
        return message_strategy(tp, _depth + 1, text)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return st.sampled_from(list(tp))
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return st.one_of([for_type(arg, _depth, text) for arg in args])
    if origin is list:
        if _depth > 2:  # keep recursive messages (a tree of nodes) finite
            return st.just([])
        return st.lists(for_type(args[0], _depth, text), max_size=3)
    if origin is dict:
        return st.dictionaries(for_type(args[0], _depth, text), for_type(args[1], _depth, text), max_size=3)
    if origin is tuple:
        return st.tuples(*(for_type(arg, _depth, text) for arg in args))
    if tp is float:
        return st.floats(allow_nan=False, allow_infinity=False)
    if tp is int:  # the codec's wire contract: integers fit in 64 bits
        return st.integers(-(2**63), 2**63 - 1)
    if tp is type(None):
        return st.none()
    return st.from_type(tp)


def message_strategy(cls: type, _depth: int = 0, text: st.SearchStrategy[str] | None = None) -> st.SearchStrategy[Any]:
    """Instances of the attrs message class ``cls`` with every field drawn
    (every string from ``text`` when given)."""
    hints = typing.get_type_hints(cls)
    fields = {f.name: for_type(hints[f.name], _depth, text) for f in attrs.fields(cls) if f.init}
    return st.builds(cls, **fields)


def secret_samples() -> st.SearchStrategy[Any]:
    """A freshly generated fake credential of any kind the redaction table covers, in its context line."""
    return st.builds(make_sample, st.sampled_from(KINDS), st.randoms(use_true_random=False))


# --- hostile input ------------------------------------------------------------------------------

#: Lone UTF-16 halves: valid in a JSON string as escapes, unencodable as UTF-8.
SURROGATES = ("\udc80", "\ud800", "\udfff", "\ud83d", "\ude00")

#: Characters that have broken text handling somewhere: the surrogates, NUL and other C0/C1
#: controls, bidi overrides and isolates, zero-width and BOM, line/paragraph separators,
#: noncharacters, an astral character, and JSON's own quote and backslash.
HOSTILE_CHARACTERS = (
    *SURROGATES, "\x00", "\x01", "\x1b", "\x7f", "\x85", "\x9f", "\u202e", "\u202d", "\u2066", "\u200b",
    "\u200f", "\ufeff", "\u2028", "\u2029", "\ufffe", "\uffff", "\U0001f600", "\\", '"', "\n", "\r", "\t",
)

#: Any text at all, hostile characters over-represented; surrogates are allowed (Hypothesis's default excludes them).
hostile_text: st.SearchStrategy[str] = st.text(
    st.sampled_from(HOSTILE_CHARACTERS) | st.characters(exclude_categories=[]), max_size=30
)


@st.composite
def text_with_surrogate(draw: st.DrawFn) -> str:
    """Hostile text that holds at least one lone surrogate, next to an ASCII word (searchable)."""
    before, after = draw(hostile_text), draw(hostile_text)
    return f"{before}{draw(st.sampled_from(SURROGATES))} needle{draw(st.integers(0, 999))} {after}"


def hostile_json_values(text: st.SearchStrategy[str] = hostile_text) -> st.SearchStrategy[Any]:
    """JSON-like values whose strings (keys included) are drawn from ``text``."""
    return st.recursive(
        st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False, allow_infinity=False)
        | text,
        lambda children: st.lists(children, max_size=4) | st.dictionaries(text, children, max_size=4),
        max_leaves=12,
    )


@st.composite
def deeply_nested_json(draw: st.DrawFn, min_depth: int = 101) -> str:
    """JSON text nested deeper than ``min_depth``: arrays, objects, a mix, closed or left open."""
    depth = draw(st.integers(min_depth, 200_000))
    shape = draw(st.sampled_from(["array", "object", "mixed"]))
    if shape == "array":
        opener, closer = "[", "]"
    elif shape == "object":
        opener, closer = '{"a":', "}"
    else:
        opener, closer = '[{"k":', "}]"
    body = opener * depth + "1"
    return body + closer * depth if draw(st.booleans()) else body


#: A JSON number longer than Python's default 4,300-digit conversion limit.
huge_integer_json: st.SearchStrategy[str] = st.builds(
    lambda sign, digits: sign + "9" * digits, st.sampled_from(["", "-"]), st.integers(4_301, 50_000)
)

#: Byte sequences no UTF-8 decoder accepts: a stray continuation byte, an overlong NUL, an encoded
#: surrogate, a cut-off sequence, a five-byte form, 0xFF.
INVALID_UTF8 = (b"\x80", b"\xc0\x80", b"\xed\xa0\x80", b"\xe2\x82", b"\xf8\x88\x80\x80\x80", b"\xff")


@st.composite
def hostile_frames(draw: st.DrawFn, valid: bytes) -> bytes:
    """A frame derived from the ``valid`` JSON object frame (no newline) by one hostile change."""
    kind = draw(st.sampled_from(["nested", "integer", "utf8", "surrogate", "constant", "cut", "splice"]))
    body = valid.rstrip(b"}")
    if kind == "nested":
        return body + b',"x":' + draw(deeply_nested_json()).encode() + b"}"
    if kind == "integer":
        return body + b',"x":' + draw(huge_integer_json).encode() + b"}"
    if kind == "utf8":
        at = draw(st.integers(0, len(valid)))
        return valid[:at] + draw(st.sampled_from(INVALID_UTF8)) + valid[at:]
    if kind == "surrogate":
        escape = draw(st.sampled_from(["\\udc80", "\\ud800", "\\uDFFF", "\\ud83d\\u0041"]))
        return body + f',"x":"{escape}"}}'.encode()
    if kind == "constant":
        return body + b',"x":' + draw(st.sampled_from([b"NaN", b"Infinity", b"-Infinity"])) + b"}"
    if kind == "cut":
        return valid[: draw(st.integers(0, len(valid) - 1))]
    at = draw(st.integers(0, len(valid)))
    return valid[:at] + draw(st.binary(max_size=12)) + valid[at:]
