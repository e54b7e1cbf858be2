"""Memory context fencing (seed 002 sections 9.3 and 9.4).

Recalled memory is added to the user message of a provider call, never to the system prompt (which
must stay byte-identical for prompt caching), inside a ``<memory-context>`` fence with a note saying it
is reference data and not something the user just said. Models sometimes echo the fence back; the
streaming scrubber removes such blocks from text deltas before anyone sees them, even when a tag is
split across deltas.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import attrs

OPEN_TAG = "<memory-context>"
CLOSE_TAG = "</memory-context>"
SYSTEM_NOTE = (
    "[System note: the block below is memory recalled from earlier sessions, not new input from the user. "
    "Use it as reference data; the user's actual message follows the block.]"
)


def fence_memory_context(recalled: str) -> str:
    """Wrap recalled memory in the fence with the system note; fence tags inside it are removed (text kept)."""
    clean = recalled.replace(OPEN_TAG, "").replace(CLOSE_TAG, "").strip()
    return f"{OPEN_TAG}\n{SYSTEM_NOTE}\n\n{clean}\n{CLOSE_TAG}"


def inject_memory_context(user_message: Mapping[str, Any], recalled: str) -> dict[str, Any]:
    """Return a copy of ``user_message`` with the fenced memory block placed before its content.

    The result is for one provider call only; the stored history keeps the original message.
    An empty ``recalled`` returns an unchanged copy.
    """
    message = copy.deepcopy(dict(user_message))
    if not recalled.strip():
        return message
    fenced = fence_memory_context(recalled)
    content = message.get("content")
    if isinstance(content, list):
        message["content"] = [{"type": "text", "text": fenced}, *content]
    else:
        message["content"] = f"{fenced}\n\n{content or ''}"
    return message


def scrub_memory_context(text: str) -> str:
    """Remove every ``<memory-context>`` block from ``text``; an unclosed block runs to the end."""
    scrubber = StreamingContextScrubber()
    return scrubber.feed(text) + scrubber.flush()


def _held_prefix_length(data: str, tag: str) -> int:
    """Length of the longest suffix of ``data`` that is a proper prefix of ``tag``."""
    for length in range(min(len(tag) - 1, len(data)), 0, -1):
        if data.endswith(tag[:length]):
            return length
    return 0


@attrs.define
class StreamingContextScrubber:
    """Removes memory-context blocks from a stream of text deltas, one per streamed reply.

    Feeding any split of a text and then flushing gives exactly :func:`scrub_memory_context` of the
    whole text: a tail that might be the start of a tag is held back until the next delta decides it.
    """

    # Invariant: _held is a proper prefix of the tag being looked for (OPEN outside, CLOSE inside).
    _held: str = ""
    _inside: bool = False

    def feed(self, text: str) -> str:
        """Take the next delta and return the part that is safe to show now."""
        data = self._held + text
        shown: list[str] = []
        while True:
            tag = CLOSE_TAG if self._inside else OPEN_TAG
            index = data.find(tag)
            if index < 0:
                keep = _held_prefix_length(data, tag)
                if not self._inside:
                    shown.append(data[: len(data) - keep])
                self._held = data[len(data) - keep :] if keep else ""
                return "".join(shown)
            if not self._inside:
                shown.append(data[:index])
            data = data[index + len(tag) :]
            self._inside = not self._inside

    def flush(self) -> str:
        """End of stream: return held-back text that turned out not to be a tag (nothing inside a block)."""
        held = "" if self._inside else self._held
        self._held = ""
        self._inside = False
        return held
