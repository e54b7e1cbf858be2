"""The parts of a search both relational stores share: filters, grouping per session, results.

Each store finds candidate messages with its own full-text machinery (``store.sqlite.search``:
FTS5; ``store.postgres.search``: ``tsvector`` and ``pg_trgm``) as rows of hit columns and a
``rank`` (lower is better); grouping them per session and building the results is common.
"""

from __future__ import annotations

from typing import Any

from store.query import HITS_PER_SESSION, SearchRequest, snippet
from store.records import SearchHit, SessionMatches
from store.sql.connection import Connection
from store.sql.reads import LIVE_SESSION, session_infos

__all__ = ["HIT_COLUMNS", "SearchQueries", "like_pattern", "matches"]

HIT_COLUMNS = "m.id, m.session_id, m.role, m.created_at, coalesce(m.tool_name, m.name)"


def like_pattern(term: str) -> str:
    """A LIKE pattern (escape character ``\\``) matching ``term`` anywhere, its wildcards literal."""
    return "%" + term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _filters(request: SearchRequest) -> tuple[str, list[Any]]:
    clauses = [LIVE_SESSION, f"m.role IN ({', '.join('?' * len(request.roles))})"]
    params: list[Any] = list(request.roles)
    if request.since is not None:
        clauses.append("m.created_at >= ?")
        params.append(request.since)
    if request.until is not None:
        clauses.append("m.created_at <= ?")
        params.append(request.until)
    if request.source is not None:
        clauses.append("s.source = ?")
        params.append(request.source)
    if request.current_session_id is not None:
        # The live history of the asking session is already in its context.
        clauses.append("NOT (m.session_id = ? AND m.epoch = s.epoch)")
        params.append(request.current_session_id)
    return " AND ".join(clauses), params


class SearchQueries:
    """The queries of one search, sharing its filters (each store adds how it finds candidates)."""

    def __init__(self, conn: Connection, request: SearchRequest) -> None:
        self.conn = conn
        self.request = request
        self.where, self.params = _filters(request)

    def rows(self, sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
        """Run one query."""
        return self.conn.execute(sql, params).fetchall()

    def grouped(self, inner: str, params: list[Any]) -> list[tuple[Any, ...]]:
        """The best hits of each session among ``inner``'s rows (hit columns, ``rank``), best session first."""
        sql = f"""
            WITH hits AS ({inner}),
            ranked AS (
                SELECT *, row_number() OVER (PARTITION BY session_id ORDER BY rank, id) AS n,
                       min(rank) OVER (PARTITION BY session_id) AS best
                FROM hits
            )
            SELECT id, session_id, role, created_at, tool FROM ranked
            WHERE n <= {HITS_PER_SESSION} ORDER BY best, session_id, rank, id LIMIT ?
        """
        return self.rows(sql, [*params, self.request.limit * HITS_PER_SESSION])


def matches(
    conn: Connection, rows: list[tuple[Any, ...]], terms: list[str], limit: int
) -> list[SessionMatches]:
    """The results of a search: ``rows`` (hit columns, best session first) as each session's hits with
    snippets, at most ``limit`` sessions."""
    if not rows:
        return []
    ids = [row[0] for row in rows]
    marks = ", ".join("?" * len(ids))
    texts = {
        row[0]: (row[1] or "", row[2] or "")
        for row in conn.execute(f"SELECT id, body, calls FROM message_text WHERE id IN ({marks})", ids)
    }
    order: list[str] = []
    hits: dict[str, list[SearchHit]] = {}
    for message_id, session_id, role, created_at, tool in rows:
        body, calls = texts.get(message_id, ("", ""))
        in_body = any(term.casefold() in body.casefold() for term in terms)
        text = body if in_body or not calls else calls
        if session_id not in hits:
            if len(order) == limit:
                continue
            order.append(session_id)
            hits[session_id] = []
        hits[session_id].append(SearchHit(message_id, session_id, role, created_at, snippet(text, terms), tool))
    sids = ", ".join("?" * len(order))
    infos = {info.id: info for info in session_infos(conn, f"s.id IN ({sids})", tuple(order))}
    return [SessionMatches(session=infos[sid], hits=tuple(hits[sid])) for sid in order if sid in infos]
