"""A back-off on refused API keys, per client address, so guessing the key is slow, through the API's bearer
header or the dashboard's login form alike (one count for both). A client's first :data:`FREE_REFUSALS` wrong
keys cost nothing (a person mistyping); after each one past them the client's next key is refused unchecked
until a wait has passed, the wait doubling with each refusal (from :data:`FIRST_WAIT_SECONDS` to
:data:`MAX_WAIT_SECONDS`). A right key clears the client's count. At most :data:`MAX_CLIENTS` clients are
remembered (the longest quiet is forgotten first), so a flood of addresses cannot grow memory.

Clients are told apart by their address: behind a reverse proxy they share one, and so one back-off.
Time is ``trio.current_time()`` (tests move it with the autojump clock).
"""

from __future__ import annotations

from collections import OrderedDict

import attrs
import trio

__all__ = ["FIRST_WAIT_SECONDS", "FREE_REFUSALS", "MAX_CLIENTS", "MAX_WAIT_SECONDS", "KeyThrottle"]

#: Wrong keys a client may give before it has to wait.
FREE_REFUSALS = 3

#: The wait after a client's first refused key.
FIRST_WAIT_SECONDS = 1.0
#: The longest wait, however many keys were refused.
MAX_WAIT_SECONDS = 60.0
#: Clients remembered at once.
MAX_CLIENTS = 1024


#: Doublings counted at most (the wait is capped long before; this keeps the power a small number).
_MAX_DOUBLINGS = 32


@attrs.define
class _Refusals:
    count: int
    until: float  # no attempt is checked before this time


class KeyThrottle:
    """Refused keys by client, and how long each must wait.

    Args:
        free: wrong keys a client may give before it has to wait.
        first / most: the first wait and the longest one (seconds).
        clients: how many clients are remembered.
    """

    def __init__(
        self, free: int = FREE_REFUSALS, first: float = FIRST_WAIT_SECONDS, most: float = MAX_WAIT_SECONDS,
        clients: int = MAX_CLIENTS,
    ) -> None:
        self.free = free
        self.first = first
        self.most = most
        self.clients = clients
        self._refusals: OrderedDict[str, _Refusals] = OrderedDict()

    def wait_left(self, client: str) -> float:
        """Seconds ``client`` must still wait before its next key is checked (0: it may try now)."""
        refusals = self._refusals.get(client)
        return max(0.0, refusals.until - trio.current_time()) if refusals is not None else 0.0

    def refused(self, client: str) -> float:
        """Count a refused key from ``client``; the wait it now has (seconds, 0 while its refusals are free)."""
        refusals = self._refusals.pop(client, None)
        count = refusals.count + 1 if refusals is not None else 1
        past = count - self.free  # refusals past the free ones
        wait = min(self.most, self.first * 2 ** min(past - 1, _MAX_DOUBLINGS)) if past > 0 else 0.0
        self._refusals[client] = _Refusals(count, trio.current_time() + wait)
        while len(self._refusals) > self.clients:
            self._refusals.popitem(last=False)
        return wait

    def admitted(self, client: str) -> None:
        """``client`` gave the right key: its refusals are forgotten."""
        self._refusals.pop(client, None)
