"""What the dashboard asks of the daemon, answered as JSON-ready dicts.

Everything goes through the control service the control socket serves (the daemon's own registry,
store and sessions), so the page sees exactly what ``hermes-actors tree --json``, ``sessions``,
``attach`` and ``cron list`` see, and its actions are the CLI's (interrupt, steer, answer, send).
Sessions the dashboard starts are created as the HTTP API creates its own: in the API's working
directory, under ``platforms.api_server``'s sandbox mode and limits, with source ``dashboard``; they
also have ``clarify``, which API sessions go without.
"""

from __future__ import annotations

import itertools
import logging
from typing import Any

import attrs
import trio

from actors.platform.api.gateway import API_TOOLSETS, ApiGateway
from actors.platform.daemon.control import record_commands
from actors.platform.daemon.control.cron_commands import cron_request
from actors.platform.daemon.control.service import ControlService
from actors.session import SessionOptions
from control.errors import RequestFailed
from messages import control as c
from messages.codec import make_message_converter
from messages.session import EventFeed
from messages.tree_json import node_json

__all__ = ["DASHBOARD_SOURCE", "DASHBOARD_TOOLSETS", "DashboardDesk", "TRANSCRIPT_MESSAGES"]

log = logging.getLogger("hermes_actors.dashboard")

#: The ``source`` of the sessions the dashboard's chat box starts.
DASHBOARD_SOURCE = "dashboard"
#: Their tools: the API's, and ``clarify``, since a person at the page answers questions.
DASHBOARD_TOOLSETS = (*API_TOOLSETS, "clarify")
#: The stored messages a transcript opens with (the newest ones; live events follow).
TRANSCRIPT_MESSAGES = 200
#: Sessions a listing shows.
LIST_LIMIT = 50
#: Sessions a search shows (the store's most).
SEARCH_LIMIT = 10

_converter = make_message_converter()


class DashboardDesk:
    """The dashboard's view of the daemon.

    Args:
        service: the control service (tree, sessions, approvals, cron).
        gateway: the HTTP API's gateway (where and how new sessions start).
    """

    def __init__(self, service: ControlService, gateway: ApiGateway) -> None:
        self.service = service
        self.gateway = gateway
        self._ids = itertools.count(1)

    def _rid(self) -> str:
        return f"dashboard-{next(self._ids)}"

    async def state(self) -> dict[str, Any]:
        """The live tree (the ``tree --json`` schema), the platforms, the API and the cron jobs."""
        now = trio.current_time()
        tree = node_json(_converter.unstructure(self.service.system.tree()), now)
        return {
            "tree": tree,
            "platforms": [attrs.asdict(p) for p in self.service.platform_statuses()],
            "api": attrs.asdict(api) if (api := self.service.api_status()) is not None else None,
            "cron": await self._cron_jobs(),
        }

    async def _cron_jobs(self) -> list[dict[str, Any]]:
        try:
            reply = await cron_request(self.service.system, c.CronRequest(self._rid(), "list"))
        except RequestFailed:
            return []  # this daemon runs no cron
        return [attrs.asdict(job) for job in reply.jobs]

    async def sessions(self, query: str) -> list[dict[str, Any]]:
        """The newest stored sessions, or those whose messages match ``query`` (full-text search).

        Raises:
            RequestFailed: ``invalid`` for a query the store cannot read, ``unavailable`` without a store.
        """
        if not query.strip():
            listed = await record_commands.list_sessions(self.service, c.ListSessions(self._rid(), limit=LIST_LIMIT))
            return [{"session": attrs.asdict(s), "hits": []} for s in listed.sessions]
        found = await record_commands.search_sessions(self.service, c.SearchSessions(self._rid(), query, limit=SEARCH_LIMIT))
        return [attrs.asdict(match) for match in found.matches]

    async def transcript(self, session_id: str) -> dict[str, Any]:
        """A stored session's summary and its newest messages (``omitted``: how many older ones are not shown).

        Raises:
            RequestFailed: ``not_found``.
        """
        shown = await record_commands.show_session(
            self.service, c.ShowSession(self._rid(), session_id, head=0, tail=TRANSCRIPT_MESSAGES)
        )
        return {
            "session": attrs.asdict(shown.session), "messages": [*shown.head, *shown.tail], "omitted": shown.omitted,
        }

    async def subscribe(self, session_id: str) -> EventFeed:
        """The session's events from now on, a running turn's shown from its start, pending questions first."""
        return await self.service.subscribe(c.Attach(self._rid(), session_id), label="dashboard")

    async def create(self) -> str:
        """Start a session for the chat box; its id.

        Raises:
            RequestFailed: ``invalid`` (the API's sandbox settings are refused, a provider key is missing).
        """
        options = SessionOptions(
            cwd=self.gateway.cwd, source=DASHBOARD_SOURCE, interactive=True, toolsets=DASHBOARD_TOOLSETS,
            sandbox=self.gateway.config.sandbox, limits=self.gateway.config.limits,
        )
        try:
            session_id = await self.gateway.sessions.create_session(options)
        except ValueError as exc:
            raise RequestFailed("invalid", str(exc)) from exc
        log.info("dashboard: session %s created", session_id)
        return session_id

    async def chat(self, session_id: str, text: str) -> str:
        """Send ``text`` to a session (queued, or steering, as its ``busy_input_mode`` says); what became of it.

        Raises:
            RequestFailed: ``busy`` (the running-turn cap), ``not_found``.
        """
        return (await self.service.send_message(c.SendMessage(self._rid(), session_id, text))).message

    async def interrupt(self, session_id: str) -> str:
        """Interrupt the session's running turn; what the session said.

        Raises:
            RequestFailed: ``no_turn`` when none runs.
        """
        return (await self.service.interrupt(c.InterruptSession(self._rid(), session_id))).message

    async def steer(self, path: str, text: str) -> str:
        """Steer the running turn of the session or subagent at ``path`` (a session id is its session).

        Raises:
            RequestFailed: ``no_turn`` when none runs.
        """
        return (await self.service.steer(c.SteerSession(self._rid(), path, text))).message

    async def answer(self, session_id: str, pending_id: str, answer: str) -> str:
        """Answer a session's pending approval or clarify question."""
        request = c.AnswerSessionRequest(self._rid(), session_id, pending_id, answer)
        return (await self.service.answer(request, answered_by="dashboard")).message
