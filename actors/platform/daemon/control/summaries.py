"""Store records turned into the control conversation's listing messages."""

from __future__ import annotations

from collections.abc import Container

from messages.session_records import SearchHitSummary, SearchMatch, SessionSummary
from store.records import SessionInfo, SessionMatches

__all__ = ["match_summary", "session_summary"]


def session_summary(info: SessionInfo, live: bool, subagents: int = 0) -> SessionSummary:
    """A stored session's row as listings show it (``subagents``: how many it started, where counted)."""
    return SessionSummary(
        id=info.id,
        title=info.title,
        source=info.source,
        model=info.model,
        cwd=info.cwd,
        parent_session_id=info.parent_session_id,
        started_at=info.started_at,
        last_active=info.last_active,
        ended_at=info.ended_at,
        end_reason=info.end_reason,
        message_count=info.message_count,
        tool_call_count=info.tool_call_count,
        tokens_in=info.tokens_in,
        tokens_out=info.tokens_out,
        cost=info.cost,
        preview=info.preview,
        live=live,
        subagents=subagents,
    )


def match_summary(match: SessionMatches, live: Container[str]) -> SearchMatch:
    """A search result: the session and its best hits."""
    return SearchMatch(
        session=session_summary(match.session, match.session.id in live),
        hits=[
            SearchHitSummary(
                message_id=hit.message_id,
                role=hit.role,
                created_at=hit.created_at,
                snippet=hit.snippet,
                tool_name=hit.tool_name,
            )
            for hit in match.hits
        ],
    )
