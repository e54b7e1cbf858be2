"""The control requests about stored sessions: list, search, show, export, delete; and how store
errors become replies (``store_errors``, shared with the control service)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import trio

from actors.platform.daemon.control.summaries import match_summary, session_summary
from control.errors import RequestFailed
from conversation.transcript_export import render_export
from messages import control as c
from messages import session_records as records
from messages.session_records import EXPORT_FORMATS
from store.errors import (
    InvalidQueryError,
    SessionNotFoundError,
    SessionOwnedElsewhere,
    StoreClosedError,
    StoreError,
)

if TYPE_CHECKING:
    from actors.platform.daemon.control.service import ControlService

__all__ = [
    "EXPORT_CHUNK_CHARS",
    "delete_session", "export_session", "list_sessions", "search_sessions", "show_session",
    "store_errors",
]

log = logging.getLogger("hermes_actors.control")

#: Characters of an exported session per ``ExportChunk``.
EXPORT_CHUNK_CHARS = 256 * 1024


@contextmanager
def store_errors() -> Iterator[None]:
    """Translate store errors into RequestFailed with a fitting code (every request that reads or
    writes the store)."""
    try:
        yield
    except SessionNotFoundError as exc:
        raise RequestFailed("not_found", str(exc)) from exc
    except (InvalidQueryError, ValueError) as exc:
        raise RequestFailed("invalid", str(exc)) from exc
    except StoreClosedError as exc:
        raise RequestFailed("shutting_down", str(exc)) from exc
    except SessionOwnedElsewhere as exc:
        raise RequestFailed("unavailable", str(exc)) from exc
    except StoreError as exc:
        log.error("store error serving a control request: %s", exc)
        raise RequestFailed("internal", f"store error: {exc}") from exc


async def list_sessions(service: ControlService, request: c.ListSessions) -> records.SessionListReply:
    """Stored sessions, newest first, marked live when running; subagents only when asked for,
    else counted on their parent's row."""
    store = service.require_store()
    with store_errors():
        infos = await store.list_sessions(
            limit=request.limit, offset=request.offset, source=request.source, top_level=not request.include_subagents
        )
        counts = await store.subagent_counts([info.id for info in infos])
    live = await service.live_ids()
    return records.SessionListReply(
        request.request_id, [session_summary(info, info.id in live, counts.get(info.id, 0)) for info in infos]
    )


async def search_sessions(service: ControlService, request: c.SearchSessions) -> records.SearchReply:
    """Full-text search over stored sessions."""
    with store_errors():
        found = await service.require_store().search(
            request.query, limit=request.limit, roles=tuple(request.roles), source=request.source
        )
    live = await service.live_ids()
    return records.SearchReply(request.request_id, [match_summary(match, live) for match in found])


async def show_session(service: ControlService, request: c.ShowSession) -> records.SessionShowReply:
    """A stored session's first and last messages."""
    session_id = await service.session_id_for(request.session_id)
    with store_errors():
        excerpt = await service.require_store().read_session(session_id, head=request.head, tail=request.tail)
    return records.SessionShowReply(
        request.request_id,
        session_summary(excerpt.session, service.is_live(excerpt.session.id)),
        [message.to_json() for message in excerpt.head],
        [message.to_json() for message in excerpt.tail],
        excerpt.omitted,
    )


async def export_session(service: ControlService, request: c.ExportSession) -> AsyncIterator[records.ExportChunk]:
    """A stored session in the format asked for (JSON lines, Markdown, HTML), in chunks."""
    if request.format not in EXPORT_FORMATS:
        raise RequestFailed("invalid", f"unknown export format {request.format!r}; known: {', '.join(EXPORT_FORMATS)}")
    session_id = await service.session_id_for(request.session_id)
    with store_errors():
        text = await service.require_store().export_jsonl(session_id)
    if request.format != "jsonl":
        # A long session's page is built in a worker thread: the control actor keeps serving meanwhile.
        text = await trio.to_thread.run_sync(render_export, text, request.format)
    chunks = [text[i : i + EXPORT_CHUNK_CHARS] for i in range(0, len(text), EXPORT_CHUNK_CHARS)] or [""]
    for index, chunk in enumerate(chunks):
        yield records.ExportChunk(request.request_id, chunk, index == len(chunks) - 1)


async def delete_session(service: ControlService, request: c.DeleteSession) -> c.Ok:
    """Delete a stored session, stopping it first when it is live."""
    store = service.require_store()
    session_id = await service.session_id_for(request.session_id)
    if service.sessions is None:
        with store_errors():
            await store.delete_session(session_id)
    else:
        if service.is_live(session_id):
            await service.sessions.close_session(session_id, "deleted")
        with store_errors():
            # Held while deleting: a session another daemon runs (a shared database) is not
            # deleted under it.
            async with service.sessions.exclusive(session_id):
                await store.delete_session(session_id)
    log.info("session %s deleted", session_id)
    return c.Ok(request.request_id, f"deleted {session_id}")
