"""``curator``: the daemon's actor that keeps the agent's skills tidy on Hermes's schedule.

Messages: :class:`Curate` (``hermes-actors skills curate``: a pass now, or a dry run). Loop: wait for a
message or the next scheduled pass, whichever comes first. A pass is due ``curator.interval_hours`` after
the last one (kept in ``skills/.curator_state``, so a restarted daemon keeps the schedule); a home seen
for the first time waits one whole interval, as in Hermes. The wait is re-read from the wall clock at
least every :data:`LONGEST_SLEEP` seconds (a suspend, a clock change, a changed config). Each pass is a
:class:`~actors.platform.curator.job.CurationJob` named ``run`` under this actor (``tree`` shows it),
beside the sessions and never in a turn's way; one at a time.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Collection
from typing import Any
from datetime import datetime, timedelta

import attrs
import trio

from actors import Actor, Rejected
from actors.platform.curator.job import CurationJob, CurationReport
from actors.session import SessionDeps, SessionModel, SessionOptions
from messages.request import Request
from messages.supervision import ActorState
from tools.skills import curation
from tools.skills.curation import CurationError

__all__ = ["CURATOR", "LONGEST_SLEEP", "Curate", "CuratorActor"]

log = logging.getLogger("hermes_actors.platform.curator")

#: The actor's name under the root.
CURATOR = "curator"
#: The longest the actor sleeps before it reads the wall clock and the config again.
LONGEST_SLEEP = 3600.0


@attrs.frozen
class Curate(Request[CurationReport]):
    """Run a pass now (whatever the schedule and ``curator.enabled`` say); the reply is its report.

    Attributes:
        dry_run: change nothing; report what would change.
        consolidate: run the model's merging pass (None: as ``curator.consolidate`` says).
    """

    dry_run: bool = False
    consolidate: bool | None = None


class CuratorActor(Actor[Curate]):
    """Runs the skills curator; see the module's docstring.

    Args:
        deps: the sessions' shared dependencies as they are now (config, tool registry, provider access).
        now: the wall clock (aware); tests tie it to Trio's clock.
        protected: the skills a pass must not archive (those a cron job names); raises
            :class:`~tools.skills.curation.CurationError` when they cannot be known (the pass is skipped).
    """

    kind = "curator"

    def __init__(
        self, deps: Callable[[], SessionDeps], now: Callable[[], datetime],
        protected: Callable[[], Awaitable[Collection[str]]],
    ) -> None:
        super().__init__()
        self.deps = deps
        self.now = now
        self.protected = protected
        self.last_run: datetime | None = None
        self.runs = 0

    def snapshot_details(self) -> dict[str, Any]:
        due = self._due()
        return {"last_run": self.last_run.isoformat() if self.last_run else None, "runs": self.runs,
                "next_due": due.isoformat() if due else None}

    async def on_start(self) -> None:
        home = self.deps().home
        self.last_run = await trio.to_thread.run_sync(curation.last_run, home)
        if self.last_run is None:
            # As in Hermes: the first pass comes one interval after the curator first sees a home.
            self.last_run = self.now()
            await self._remember(self.last_run, "first seen; the first pass is one interval away")

    def _due(self) -> datetime | None:
        config = self.deps().config.curator
        if not config.enabled or self.last_run is None:
            return None
        return self.last_run + timedelta(hours=config.interval_hours)

    async def main(self) -> None:
        mailbox = self.mailbox
        while True:
            due = self._due()
            if due is not None and due <= self.now():
                await self._run(dry_run=False, consolidate=None)
                continue
            wait = LONGEST_SLEEP if due is None else min(LONGEST_SLEEP, (due - self.now()).total_seconds())
            with trio.move_on_after(wait):
                try:
                    item = await mailbox.get()
                except (trio.EndOfChannel, trio.ClosedResourceError):
                    return
                await self.serve_item(item)
            self.state = ActorState.IDLE

    async def handle(self, message: Curate) -> CurationReport:
        if not isinstance(message, Curate):
            raise Rejected(TypeError(f"curator takes no {type(message).__name__}"))
        return await self._run(dry_run=message.dry_run, consolidate=message.consolidate)

    async def _run(self, *, dry_run: bool, consolidate: bool | None) -> CurationReport:
        deps = self.deps()
        started = self.now()
        if not dry_run:
            # Remembered before the pass: one that crashes the actor is not retried at once on its restart.
            self.last_run = started
            await self._remember(started, "a pass is under way")
        try:
            protected = await self.protected()
        except CurationError as exc:
            # Which skills a cron job needs is unknown: archiving any could break a job's next run.
            log.warning("curator: pass skipped: %s", exc)
            return CurationReport(dry_run, summary=f"curator: skipped: {exc}", error=str(exc))
        model = SessionModel(deps, SessionOptions(cwd=str(deps.home)))
        job = CurationJob(deps.home, deps.config, model, deps.registry, self.now, dry_run=dry_run,
                          consolidate=consolidate, protected=protected)
        self.activity = "curating skills"
        report = await self.run_job(job, "run")
        self.activity = ""
        self.runs += 1
        (log.warning if report.error else log.info)("%s", report.summary)
        return report

    async def _remember(self, at: datetime, summary: str) -> None:
        try:
            await trio.to_thread.run_sync(curation.record_run, self.deps().home, at, summary)
        except OSError as exc:
            log.error("curator: its schedule could not be saved: %s", exc)
