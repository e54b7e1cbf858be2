"""Search arguments, their validation and the text helpers both store implementations share."""

from __future__ import annotations

import re

import attrs

from messages.untrusted import repair_text
from store.errors import InvalidQueryError

__all__ = [
    "MAX_SEARCH_LIMIT",
    "SEARCHABLE_ROLES",
    "SearchRequest",
    "has_cjk",
    "query_terms",
    "snippet",
]

MAX_SEARCH_LIMIT = 10
# System messages are not indexed: the system prompt is nearly the same in every session.
SEARCHABLE_ROLES = frozenset({"user", "assistant", "tool"})
# Hits kept per session in a search result.
HITS_PER_SESSION = 3

# FTS5 operators and syntax characters that are not words to look for.
_OPERATORS = frozenset({"AND", "OR", "NOT", "NEAR"})
_SYNTAX = re.compile(r'[()"*^:+{}]')
# Han, Hiragana, Katakana, Hangul, CJK punctuation and full-width forms: scripts written without spaces.
_CJK = re.compile(r"[\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")


@attrs.frozen
class SearchRequest:
    """A validated search: see ``SessionSearchReader.search`` for the meaning of each field."""

    query: str
    limit: int
    roles: tuple[str, ...]
    since: float | None
    until: float | None
    source: str | None
    current_session_id: str | None

    @classmethod
    def build(
        cls,
        query: str,
        *,
        limit: int,
        roles: tuple[str, ...],
        since: float | None,
        until: float | None,
        source: str | None,
        current_session_id: str | None,
    ) -> SearchRequest:
        """Validate the arguments of a search.

        Raises:
            InvalidQueryError: describing the first bad argument.
        """
        if not isinstance(query, str) or not query.strip():
            raise InvalidQueryError("the search query is empty")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_SEARCH_LIMIT:
            raise InvalidQueryError(f"limit must be an integer from 1 to {MAX_SEARCH_LIMIT}, got {limit!r}")
        roles = tuple(dict.fromkeys(roles))
        unknown = [role for role in roles if role not in SEARCHABLE_ROLES]
        if unknown or not roles:
            raise InvalidQueryError(
                f"roles must be a non-empty subset of {sorted(SEARCHABLE_ROLES)}, got {list(roles)}"
            )
        if since is not None and until is not None and since > until:
            raise InvalidQueryError("the date range is empty: its start is after its end")
        return cls(repair_text(query.strip()), limit, roles, since, until, source, current_session_id)


def query_terms(query: str) -> list[str]:
    """The words of a query without FTS5 syntax, for substring matching and snippets."""
    words = _SYNTAX.sub(" ", query).split()
    return [word for word in words if word not in _OPERATORS and word != "-"]


def has_cjk(text: str) -> bool:
    """Whether ``text`` has characters of a script written without spaces between words."""
    return _CJK.search(text) is not None


def snippet(text: str, terms: list[str], width: int = 200) -> str:
    """About ``width`` characters of ``text`` around the first occurrence of any term.

    Falls back to the start of the text when no term occurs literally (a stemmed
    or prefix match). Whitespace runs are collapsed.
    """
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    lowered = flat.casefold()
    positions = [pos for term in terms if (pos := lowered.find(term.casefold())) >= 0]
    centre = min(positions) if positions else 0
    start = max(0, min(centre - width // 3, len(flat) - width))
    end = start + width
    return ("…" if start else "") + flat[start:end] + ("…" if end < len(flat) else "")
