"""Large JSON values shared by many sessions' saved states, stored once.

Every session's saved state holds its frozen tool definitions: about 16 KB, the same text for every
session offered the same tools, written at the session's start and again at each turn's end. A state's
top-level :class:`~messages.raw_json.RawJson` value of at least :data:`SHARED_MIN_CHARS` is therefore
stored once, in the ``shared_json`` table under the SHA-256 of its text, and the state holds a
reference (``{"$shared_json": "<digest>"}``) in its place. Loading a state puts the value back, so a
store's users never see the reference; states saved before inline values existed load as they are.

Shared values are never deleted: a session deleted may share them with others, and there are as many
as there were distinct tool lists.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable
from typing import Any

import attrs

from messages.raw_json import RawJson
from store.codec import dump_json
from store.errors import StoreError
from store.validate import check_dict

__all__ = ["SHARED_MIN_CHARS", "EncodedState", "SharedJsonMissing", "encode_state", "join_shared", "split_shared"]

#: Top-level raw values this long or longer are stored once.
SHARED_MIN_CHARS = 2048

_REF_KEY = "$shared_json"


class SharedJsonMissing(StoreError):
    """A saved state refers to a shared value the database does not have."""


@functools.lru_cache(maxsize=64)
def _digest(text: str) -> str:
    # The same text object comes back with every save of a session (its frozen tool list): its hash is
    # cached by the string, so this is a dictionary lookup after the first time.
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def split_shared(state: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """``state`` with its large top-level raw values replaced by references, and those values by digest."""
    shared: dict[str, str] = {}
    stored: dict[str, Any] = {}
    for key, value in state.items():
        if isinstance(value, RawJson) and len(value.text) >= SHARED_MIN_CHARS:
            digest = _digest(value.text)
            shared[digest] = value.text
            stored[key] = {_REF_KEY: digest}
        else:
            stored[key] = value
    return (stored if shared else state), shared


@attrs.frozen
class EncodedState:
    """A state as a write stores it: its JSON text, and the shared values it refers to that the store
    has not stored yet (by digest)."""

    text: str
    shared: dict[str, str]


def encode_state(state: dict[str, Any], stored: set[str]) -> EncodedState:
    """``state`` checked and encoded, leaving out the shared values in ``stored`` (known to be in the store).

    Raises:
        InvalidRecordError: not a dict, or not JSON-serialisable.
    """
    inline, shared = split_shared(check_dict("session state", state))
    text = dump_json(inline, "session state")
    return EncodedState(text, {digest: value for digest, value in shared.items() if digest not in stored})


def join_shared(state: dict[str, Any], fetch: Callable[[str], str | None]) -> dict[str, Any]:
    """A loaded ``state`` with each reference replaced by the value ``fetch(digest)`` gives.

    Raises:
        SharedJsonMissing: a referenced value is not in the database.
    """
    for key, value in state.items():
        if isinstance(value, dict) and len(value) == 1 and isinstance(value.get(_REF_KEY), str):
            digest = value[_REF_KEY]
            text = fetch(digest)
            if text is None:
                raise SharedJsonMissing(
                    f"the saved state's {key!r} refers to shared JSON {digest} the store does not have"
                )
            state[key] = json.loads(text)
    return state
