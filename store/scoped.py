"""A ``session_search`` view of the store limited to one realm: the HTTP API's sessions, or the rest.

The HTTP API owns the sessions it creates, and CLI sessions never see them: a model in an API session
must not search, scroll or read a CLI session's history through ``session_search``, nor the other way
round. A subagent belongs to the realm of the session that delegated to it.
"""

from __future__ import annotations

from store.errors import MessageNotFoundError, SessionNotFoundError
from store.protocol import DEFAULT_SEARCH_ROLES, SessionSearchReader, SessionStore
from store.records import SessionExcerpt, SessionInfo, SessionMatches, StoredMessage

__all__ = ["API_REALM", "LOCAL_REALM", "RealmScopedReader", "realm_of_source"]

API_REALM = "api"
LOCAL_REALM = "local"
# A parent chain longer than this is not a delegation tree (the depth limit is far below it).
_MAX_PARENTS = 16


def realm_of_source(source: str) -> str:
    """The realm a session's own source puts it in (a subagent's is its parent's: see the reader)."""
    return API_REALM if source == API_REALM else LOCAL_REALM


class RealmScopedReader(SessionSearchReader):
    """Wraps the store for one session's ``session_search``: sessions of another realm are absent.

    A session outside the realm is answered exactly as a missing one (no oracle): left out of search
    and browse results, ``SessionNotFoundError`` / ``MessageNotFoundError`` for read and scroll.
    """

    def __init__(self, store: SessionStore, realm: str) -> None:
        self._store = store
        self._realm = realm

    @classmethod
    async def for_session(cls, store: SessionStore, session_id: str, source: str | None = None) -> RealmScopedReader:
        """The view of the stored session ``session_id``: its own realm (a subagent's is its delegator's).

        ``source`` is the session's own source when the caller knows it (a session it has just
        created): then only a subagent's realm is read from the store.

        Raises:
            SessionNotFoundError: the session is not stored.
        """
        if source is not None and source != "subagent":
            return cls(store, realm_of_source(source))
        reader = cls(store, LOCAL_REALM)
        reader._realm = await reader._realm_of(await store.get_session(session_id))
        return reader

    async def _realm_of(self, info: SessionInfo) -> str:
        for _ in range(_MAX_PARENTS):
            if info.source != "subagent" or info.parent_session_id is None:
                break
            try:
                info = await self._store.get_session(info.parent_session_id)
            except SessionNotFoundError:
                break
        return realm_of_source(info.source)

    async def _visible(self, info: SessionInfo) -> bool:
        return await self._realm_of(info) == self._realm

    async def search(
        self,
        query: str,
        *,
        limit: int = 3,
        roles: tuple[str, ...] = DEFAULT_SEARCH_ROLES,
        since: float | None = None,
        until: float | None = None,
        source: str | None = None,
        current_session_id: str | None = None,
    ) -> list[SessionMatches]:
        """The store's search, keeping only this realm's sessions."""
        found = await self._store.search(
            query, limit=limit, roles=roles, since=since, until=until, source=source,
            current_session_id=current_session_id,
        )  # fmt: skip
        return [match for match in found if await self._visible(match.session)]

    async def scroll(self, message_id: int, *, before: int = 5, after: int = 5) -> list[StoredMessage]:
        """The store's scroll, for a message of this realm's sessions only.

        Raises:
            MessageNotFoundError: no such message, or it belongs to another realm.
        """
        messages = await self._store.scroll(message_id, before=before, after=after)
        try:
            info = await self._store.get_session(messages[0].session_id)
        except SessionNotFoundError:
            raise MessageNotFoundError(f"no message {message_id}") from None
        if not await self._visible(info):
            raise MessageNotFoundError(f"no message {message_id}")
        return messages

    async def read_session(self, session_id: str, *, head: int = 20, tail: int = 10) -> SessionExcerpt:
        """The store's read, for this realm's sessions only.

        Raises:
            SessionNotFoundError: no such session, or it belongs to another realm.
        """
        excerpt = await self._store.read_session(session_id, head=head, tail=tail)
        if not await self._visible(excerpt.session):
            raise SessionNotFoundError(f"no session {session_id!r}")
        return excerpt

    async def browse(
        self, *, limit: int = 10, source: str | None = None, exclude_session_id: str | None = None
    ) -> list[SessionInfo]:
        """The store's browse, keeping only this realm's sessions."""
        infos = await self._store.browse(limit=limit, source=source, exclude_session_id=exclude_session_id)
        return [info for info in infos if await self._visible(info)]
