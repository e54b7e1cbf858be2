"""The base of every message that is asked: it names the type of its reply.

``await handle.ask(Query(...))`` is then typed as ``Query``'s reply: a request class declares it
once, where it is defined, and neither the asker nor a cast repeats it::

    @attrs.frozen
    class ListJobs(Request[list[JobView]]):
        \"\"\"Every job, in creation order.\"\"\"

A request may also be told (the reply then goes nowhere). The class adds no field and no slot,
so a frozen attrs message stays as small, hashable and comparable as it was.
"""

from __future__ import annotations

from typing import Generic, TypeVar

__all__ = ["Request"]

#: The type of the reply (covariant: a request answered with a ``bool`` is one answered with an ``object``).
R_co = TypeVar("R_co", covariant=True)


class Request(Generic[R_co]):
    """A message asked of an actor, whose reply is an ``R_co``."""

    __slots__ = ()
