"""JSON encoded once and spliced into bigger documents as it is.

A session's tool definitions go into every saved state and every request body: kilobytes of the same
JSON, encoded once when the list is frozen (:class:`RawJson`) and spliced into each document by
:func:`encode_spliced`, which writes the same text as encoding the value it was made from.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

__all__ = ["RawJson", "encode_spliced"]


@attrs.frozen
class RawJson:
    """A value already encoded as compact JSON (``separators=(",", ":")``, ``ensure_ascii=False``)."""

    text: str


def encode_spliced(value: Any, encode: Callable[[Any], str]) -> str:
    """``encode(value)``, except that a dict's top-level :class:`RawJson` values go in as their text.

    ``encode`` must write compact JSON, as the spliced texts are, so the result is the text encoding the
    original values would give. Its errors propagate; a key that is not a string is a ``TypeError``, as
    ``json`` raises it for a dict with keys of mixed types.
    """
    if not (isinstance(value, dict) and any(isinstance(item, RawJson) for item in value.values())):
        return encode(value)
    if not all(isinstance(key, str) for key in value):
        raise TypeError("keys must be str when a value is spliced in")
    members = (f"{encode(key)}:{item.text if isinstance(item, RawJson) else encode(item)}" for key, item in value.items())
    return "{" + ",".join(members) + "}"
