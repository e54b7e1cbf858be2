"""A bounded memory for a platform adapter's small facts (threads it is in, conversations' owners, ids it
has handled): a mapping that forgets its oldest entries, so a long-running bot does not grow without end."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

__all__ = ["REMEMBERED", "Recent"]

#: Entries remembered (the oldest are forgotten first).
REMEMBERED = 4096


class Recent(OrderedDict[Any, Any]):
    """A mapping that forgets its oldest entries past :data:`REMEMBERED`."""

    def remember(self, key: Any, value: Any = None) -> None:
        """Set ``key`` (now the newest), forgetting the oldest entries past the bound."""
        self[key] = value
        self.move_to_end(key)
        while len(self) > REMEMBERED:
            self.popitem(last=False)
