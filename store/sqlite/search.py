"""Search over the full-text indexes (runs in a reader's worker thread).

Word search uses ``messages_fts`` with the user's FTS5 syntax (phrases,
prefixes, AND/OR/NOT), falling back to quoting every word when that syntax
does not parse. CJK queries, and word queries that found nothing, use the
trigram index ``messages_tri``: every word of three or more characters must
occur as a substring; shorter words (two-character CJK words) are checked
with LIKE on the candidates, or by a newest-first scan when no longer word
narrows the search.

Ranking is bounded: the ``CANDIDATES`` most recent matching messages are
ranked by bm25 (FTS5 walks its index newest first and stops there). A query
with fewer matches than that is ranked exactly; one matching a large part of
history is ranked among its most recent matches. A query so common that it
matches more than one in ``DENSE_RATIO`` of the newest messages (a stop word)
is ordered by recency instead: bm25 cannot tell such matches apart, and
computing it costs tens of milliseconds there. This keeps every indexed query
fast on millions of messages. Results are grouped per session in SQL (a window
per session), so one session with many hits can never push the others out.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from store.query import HITS_PER_SESSION, SearchRequest, has_cjk, query_terms
from store.records import SessionMatches
from store.sql.connection import Connection
from store.sql.search import HIT_COLUMNS, SearchQueries, like_pattern, matches

__all__ = ["search"]

# The most recent matching messages ranked per search (see the module docstring).
CANDIDATES = 500
# A query matching more than 1 in DENSE_RATIO of the newest messages is ordered by recency.
DENSE_RATIO = 5


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


class _Fts5Search(SearchQueries):
    """The FTS5 queries of one search."""

    def rank(self, table: str, match: str) -> str:
        """The SQL ranking expression for ``match`` on ``table``: bm25, or recency for a stop-word query."""
        rows = self.rows(
            f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY rowid DESC LIMIT {CANDIDATES}", [match]
        )
        if len(rows) == CANDIDATES:
            newest = self.rows("SELECT max(id) FROM messages", [])[0][0]
            if newest - rows[-1][0] < CANDIDATES * DENSE_RATIO:
                return "-m.id"
        return f"{table}.rank"

    def words(self, match: str) -> list[tuple[Any, ...]]:
        """Hits of an FTS5 query on the word index."""
        inner = (
            f"SELECT {HIT_COLUMNS} AS tool, {self.rank('messages_fts', match)} AS rank FROM messages_fts"
            " JOIN messages AS m ON m.id = messages_fts.rowid JOIN sessions AS s ON s.id = m.session_id"
            f" WHERE messages_fts MATCH ? AND {self.where} ORDER BY messages_fts.rowid DESC LIMIT {CANDIDATES}"
        )
        return self.grouped(inner, [match, *self.params])

    def substrings(self, terms: list[str]) -> list[tuple[Any, ...]]:
        """Hits containing every term as a substring (trigram index, LIKE for short terms)."""
        long = [t for t in terms if len(t) >= 3]
        short = [t for t in terms if len(t) < 3]
        like = " AND ".join(["(t.body LIKE ? ESCAPE '\\' OR t.calls LIKE ? ESCAPE '\\')"] * len(short)) or "1"
        like_params = [p for t in short for p in (like_pattern(t), like_pattern(t))]
        if long:
            match = " ".join(_quote(t) for t in long)
            inner = (
                f"SELECT {HIT_COLUMNS} AS tool, {self.rank('messages_tri', match)} AS rank FROM messages_tri"
                " JOIN messages AS m ON m.id = messages_tri.rowid JOIN sessions AS s ON s.id = m.session_id"
                " JOIN message_text AS t ON t.id = m.id"
                f" WHERE messages_tri MATCH ? AND {self.where} AND {like}"
                f" ORDER BY messages_tri.rowid DESC LIMIT {CANDIDATES}"
            )
            return self.grouped(inner, [match, *self.params, *like_params])
        # Only short words: no index narrows it; scan newest first and stop early.
        inner = (
            f"SELECT {HIT_COLUMNS} AS tool, -m.id AS rank FROM messages AS m"
            " JOIN sessions AS s ON s.id = m.session_id JOIN message_text AS t ON t.id = m.id"
            f" WHERE {self.where} AND {like} ORDER BY m.id DESC LIMIT ?"
        )
        return self.grouped(inner, [*self.params, *like_params, self.request.limit * HITS_PER_SESSION * 20])


def search(conn: Connection, request: SearchRequest) -> list[SessionMatches]:
    """Run a validated search; see ``SessionSearchReader.search``."""
    terms = query_terms(request.query)
    finder = _Fts5Search(conn, request)
    rows: list[tuple[Any, ...]] = []
    if not has_cjk(request.query):
        try:
            rows = finder.words(request.query)
        except sqlite3.OperationalError:
            # Not valid FTS5 syntax (a stray quote, 'a.b', an unknown column filter): search the words.
            rows = finder.words(" ".join(_quote(t) for t in terms)) if terms else []
    if not rows and terms:
        rows = finder.substrings(terms)
    return matches(conn, rows, terms, request.limit)
