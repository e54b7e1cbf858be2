"""The memory-context scrubber (docs/DECISIONS.md#d-memory-fencing).

Hermes puts memory recalled by a memory provider into the user message of a provider call inside a
``<memory-context>`` fence, and models sometimes echo the fence back. This daemon has no memory
provider yet (MEMORY.md and USER.md go into the system prompt, once), so nothing is fenced; the
streaming scrubber stays on every reply as the safety net: it removes such blocks from text deltas
before anyone sees them, even when a tag is split across deltas.
"""

from __future__ import annotations

import attrs

OPEN_TAG = "<memory-context>"
CLOSE_TAG = "</memory-context>"


def _held_prefix_length(data: str, tag: str) -> int:
    """Length of the longest suffix of ``data`` that is a proper prefix of ``tag``."""
    for length in range(min(len(tag) - 1, len(data)), 0, -1):
        if data.endswith(tag[:length]):
            return length
    return 0


@attrs.define
class StreamingContextScrubber:
    """Removes memory-context blocks from a stream of text deltas, one per streamed reply.

    Feeding any split of a text and then flushing gives the same text as feeding it whole: every block
    is removed (an unclosed one runs to the end), and a tail that might be the start of a tag is held
    back until the next delta decides it.
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
