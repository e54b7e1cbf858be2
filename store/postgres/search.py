"""Search on PostgreSQL: ``tsvector`` for words, ``pg_trgm`` for substrings (runs in a worker thread).

The query language is the one SQLite's store takes (FTS5's): words, ``"phrases"``, ``prefix*``,
``AND``/``OR``/``NOT`` (NOT binds tightest, then AND, then OR; a space is AND), parentheses, and the
column filters ``body:`` and ``calls:`` (accepted, searching both). It is compiled here to a
``tsquery`` built by PostgreSQL's own functions, so a word is split as the index split it
(``pg_dump`` is the phrase ``pg <-> dump``). A query that does not parse (an unbalanced quote, an
unknown column, ``NEAR``) is searched as all its words, as on SQLite.

CJK queries, and word queries that found nothing, search substrings: every word must occur in the
message's text or tool calls, case-insensitively (``ILIKE``, served by the trigram indexes for
words of three characters or more).

Ranking is bounded as on SQLite: the ``CANDIDATES`` most recent matches are ranked by ``ts_rank``,
and a query matching more than one in ``DENSE_RATIO`` of the newest messages is ordered by recency.
Substring hits are ordered by recency.
"""

from __future__ import annotations

import re
import string
from typing import Any

import attrs

from store.query import HITS_PER_SESSION, SearchRequest, has_cjk, query_terms
from store.records import SessionMatches
from store.sql.connection import Connection
from store.sql.search import HIT_COLUMNS, SearchQueries, like_pattern, matches

__all__ = ["CANDIDATES", "QuerySyntaxError", "compile_query", "search"]

CANDIDATES = 500
DENSE_RATIO = 5
_CONFIG = "'hermes_words'"
_COLUMNS = frozenset({"body", "calls"})
_PUNCTUATION_TO_SPACE = str.maketrans(string.punctuation, " " * len(string.punctuation))
_TOKEN = re.compile(r'\s*(?:(\()|(\))|"((?:[^"]|"")*)"|([^\s()"]+))')


class QuerySyntaxError(ValueError):
    """A search query outside the language (see the module docstring)."""


@attrs.frozen
class _Sql:
    """A fragment of SQL and its parameters."""

    text: str
    params: tuple[Any, ...] = ()


def _tokens(query: str) -> list[tuple[str, str]]:
    """(kind, text) pairs: ``(``, ``)``, ``phrase``, ``word``; raises on an unbalanced quote."""
    tokens: list[tuple[str, str]] = []
    pos = 0
    while pos < len(query):
        if not query[pos:].strip():
            break
        match = _TOKEN.match(query, pos)
        if match is None:
            raise QuerySyntaxError("unbalanced quote")
        pos = match.end()
        opened, closed, phrase, word = match.groups()
        if opened:
            tokens.append(("(", "("))
        elif closed:
            tokens.append((")", ")"))
        elif phrase is not None:
            tokens.append(("phrase", phrase.replace('""', '"')))
        else:
            tokens.extend(_word_tokens(word))
    return tokens


def _word_tokens(word: str) -> list[tuple[str, str]]:
    column, colon, rest = word.partition(":")
    if not colon:
        return [("word", word)]
    if column not in _COLUMNS:
        raise QuerySyntaxError(f"no column {column!r}")
    return [("word", rest)] if rest else []


class _Parser:
    """Recursive descent over the tokens: or := and (OR and)*; and := not (AND? not)*; not := atom (NOT atom)*."""

    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self._tokens = tokens
        self._pos = 0

    def parse(self) -> _Sql:
        if not self._tokens:
            raise QuerySyntaxError("empty query")
        expression = self._or()
        if self._pos != len(self._tokens):
            raise QuerySyntaxError("unexpected ')'")
        return expression

    def _peek(self) -> tuple[str, str] | None:
        return self._tokens[self._pos] if self._pos < len(self._tokens) else None

    def _operator(self, name: str) -> bool:
        token = self._peek()
        if token == ("word", name):
            self._pos += 1
            return True
        return False

    def _or(self) -> _Sql:
        left = self._and()
        while self._operator("OR"):
            left = _combine(left, "||", self._and())
        return left

    def _and(self) -> _Sql:
        left = self._not()
        while True:
            self._operator("AND")
            token = self._peek()
            if token is None or token[0] == ")" or token == ("word", "OR"):
                return left
            left = _combine(left, "&&", self._not())

    def _not(self) -> _Sql:
        left = self._atom()
        while self._operator("NOT"):
            right = self._atom()
            left = _Sql(f"({left.text} && !!{right.text})", left.params + right.params)
        return left

    def _atom(self) -> _Sql:
        token = self._peek()
        if token is None:
            raise QuerySyntaxError("the query ends with an operator")
        self._pos += 1
        kind, text = token
        if kind == "(":
            inner = self._or()
            if self._peek() != (")", ")"):
                raise QuerySyntaxError("unbalanced parenthesis")
            self._pos += 1
            return inner
        if kind == ")" or text in ("AND", "OR", "NOT", "NEAR") or text.startswith("NEAR("):
            raise QuerySyntaxError(f"unexpected {text!r}")
        if kind == "word" and text.endswith("*") and _words(text):
            return _prefix(_words(text))
        return _phrase(text)


def _words(text: str) -> list[str]:
    """The words of ``text`` as the index splits them at ASCII punctuation (``words_text``)."""
    return text.translate(_PUNCTUATION_TO_SPACE).split()


def _phrase(text: str) -> _Sql:
    return _Sql(f"phraseto_tsquery({_CONFIG}, words_text(?))", (text,))


def _prefix(words: list[str]) -> _Sql:
    """``a.b*``: the phrase ``a <-> b`` whose last word is a prefix."""
    quoted = [("'" + word.replace("\\", "\\\\").replace("'", "''") + "'") for word in words]
    return _Sql(f"to_tsquery({_CONFIG}, ?)", (" <-> ".join(quoted) + ":*",))


def _combine(left: _Sql, operator: str, right: _Sql) -> _Sql:
    return _Sql(f"({left.text} {operator} {right.text})", left.params + right.params)


def compile_query(query: str) -> _Sql:
    """The ``tsquery`` SQL expression for a query in the store's language.

    Raises:
        QuerySyntaxError: the query is outside the language.
    """
    return _Parser(_tokens(query)).parse()


def _all_words(terms: list[str]) -> _Sql:
    parts = [_phrase(term) for term in terms]
    combined = parts[0]
    for part in parts[1:]:
        combined = _combine(combined, "&&", part)
    return combined


class _PgSearch(SearchQueries):
    """The PostgreSQL queries of one search."""

    def rank(self, tsquery: _Sql) -> str:
        """``-ts_rank`` (lower is better), or recency for a query matching a large share of recent history."""
        rows = self.rows(
            f"SELECT m.id FROM messages AS m WHERE m.words @@ {tsquery.text} ORDER BY m.id DESC LIMIT {CANDIDATES}",
            list(tsquery.params),
        )
        if len(rows) == CANDIDATES:
            newest = self.rows("SELECT max(id) FROM messages", [])[0][0]
            if newest - rows[-1][0] < CANDIDATES * DENSE_RATIO:
                return "-m.id"
        return "-ts_rank(m.words, q.query)"

    def words(self, tsquery: _Sql) -> list[tuple[Any, ...]]:
        """Hits of a compiled query on the word index."""
        inner = (
            f"SELECT {HIT_COLUMNS} AS tool, {self.rank(tsquery)} AS rank"
            f" FROM (SELECT {tsquery.text} AS query) AS q, messages AS m JOIN sessions AS s ON s.id = m.session_id"
            f" WHERE m.words @@ q.query AND {self.where} ORDER BY m.id DESC LIMIT {CANDIDATES}"
        )
        return self.grouped(inner, [*tsquery.params, *self.params])

    def substrings(self, terms: list[str]) -> list[tuple[Any, ...]]:
        """Hits containing every term as a substring, newest first."""
        like = " AND ".join(["(m.body ILIKE ? ESCAPE '\\' OR m.calls ILIKE ? ESCAPE '\\')"] * len(terms))
        like_params = [p for t in terms for p in (like_pattern(t), like_pattern(t))]
        inner = (
            f"SELECT {HIT_COLUMNS} AS tool, -m.id AS rank FROM messages AS m JOIN sessions AS s ON s.id = m.session_id"
            f" WHERE {self.where} AND {like} ORDER BY m.id DESC LIMIT ?"
        )
        return self.grouped(inner, [*self.params, *like_params, self.request.limit * HITS_PER_SESSION * 20])


def search(conn: Connection, request: SearchRequest) -> list[SessionMatches]:
    """Run a validated search; see ``SessionSearchReader.search``."""
    terms = query_terms(request.query)
    finder = _PgSearch(conn, request)
    rows: list[tuple[Any, ...]] = []
    if not has_cjk(request.query):
        tsquery: _Sql | None
        try:
            tsquery = compile_query(request.query)
        except QuerySyntaxError:
            tsquery = _all_words(terms) if terms else None
        if tsquery is not None:
            rows = finder.words(tsquery)
    if not rows and terms:
        rows = finder.substrings(terms)
    return matches(conn, rows, terms, request.limit)
