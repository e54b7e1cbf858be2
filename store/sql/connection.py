"""What the shared SQL needs of a connection: the part of DB-API that ``sqlite3`` and our
PostgreSQL adapter (``store.postgres.connection``) both offer, with ``?`` placeholders."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Protocol

__all__ = ["Connection", "Cursor"]


class Cursor(Protocol):
    """The result of one statement."""

    @property
    def rowcount(self) -> int:
        """Rows the statement changed."""
        ...

    def fetchone(self) -> Any:
        """The next row, or None."""
        ...

    def fetchall(self) -> list[Any]:
        """The remaining rows."""
        ...

    def __iter__(self) -> Iterator[Any]:
        """The remaining rows, one by one."""
        ...


class Connection(Protocol):
    """A connection the shared queries run on (used by one thread at a time)."""

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> Any:
        """Run one statement with ``?`` placeholders; returns its cursor."""
        ...

    def executemany(self, sql: str, seq_of_parameters: Iterable[Sequence[Any]], /) -> Any:
        """Run one statement once per parameter row."""
        ...
