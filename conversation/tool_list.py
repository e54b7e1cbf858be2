"""A session's frozen tool list, and the cache that lets sessions offered the same list share it.

The tool definitions go into the session's saved state at every save. Encoded once per list (not once
per save of every session), a save of an API session's state is a few small encodes and a splice.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

import attrs

from store.codec import RawJson, encode_raw

__all__ = ["FrozenTools", "ToolListCache"]

#: Distinct tool lists kept by a cache (there are as many as toolset combinations in use).
MAX_CACHED_LISTS = 16


def _encode(tools: FrozenTools) -> RawJson:
    return encode_raw(tools.definitions, "tool definitions")


@attrs.frozen
class FrozenTools:
    """The tool list a session offers the model, fixed until ``/reset-tools``.

    Attributes:
        names / definitions / emojis: the tools offered, their OpenAI-style definitions, their emojis.
        encoded: ``definitions`` as the saved state holds them (encoded when the list is frozen).
    """

    names: frozenset[str]
    definitions: list[dict[str, Any]]
    emojis: dict[str, str]
    encoded: RawJson = attrs.field(default=attrs.Factory(_encode, takes_self=True), eq=False, repr=False)


class ToolListCache:
    """The tool lists frozen lately, by their names: a session offered the same definitions (the
    registry hands out the same definition objects while its memo holds) shares the list frozen
    before, and its encoding."""

    def __init__(self) -> None:
        self._lists: dict[frozenset[str], FrozenTools] = {}
        # The tool names selected for a key (the toolsets asked for), while the registry is at a generation.
        self._names: dict[Hashable, frozenset[str]] = {}
        self._names_generation = -1

    def names_for(self, key: Hashable, generation: int, select: Callable[[], frozenset[str]]) -> frozenset[str]:
        """The tool names ``select`` gives for ``key``, selected once per registry ``generation``: resolving
        the toolsets walks every registered tool per toolset, and every new session (each HTTP API
        completion) asks for the same few selections. Whatever ``select`` raises is not kept.
        """
        if generation != self._names_generation or len(self._names) >= MAX_CACHED_LISTS:
            self._names.clear()
            self._names_generation = generation
        names = self._names.get(key)
        if names is None:
            self._names[key] = names = select()
        return names

    def freeze(self, definitions: Sequence[dict[str, Any]], emojis: Callable[[], dict[str, str]]) -> FrozenTools:
        """The frozen list of ``definitions`` (``emojis`` builds its emojis when it is a new one)."""
        names = frozenset(d["function"]["name"] for d in definitions)
        known = self._lists.get(names)
        if known is not None and len(known.definitions) == len(definitions) and all(
            a is b for a, b in zip(known.definitions, definitions, strict=True)
        ):
            return known
        if len(self._lists) >= MAX_CACHED_LISTS:
            self._lists.clear()
        self._lists[names] = frozen = FrozenTools(names, list(definitions), emojis())
        return frozen
