"""A cron run as a session: a fresh ``cron`` session, the job's prompt as its one turn, its final
answer back to the ``cron`` actor.

The session has no one present (``interactive`` False: no ``clarify``, approvals by the job's own
setting, else ``approvals.cron_mode``), the job's model when it names one, and the ``hermes-cron`` tools. It is
an ordinary session under ``sessions/``, so ``tree``, ``ps``, ``kill`` and ``interrupt`` reach it
while it runs; a turn that ends any other way than ``completed`` is a failed run. It is closed when
the run ends, and kept in the store, readable like any session.
"""

from __future__ import annotations

import logging

import trio

from actors.platform.cron.actor import CronRunFailed
from actors.platform.cron.jobs import CronJob
from actors.platform.api.turns import TurnLost, send_watched
from actors.session import SessionOptions, SessionService
from messages.session import Interrupt

__all__ = ["CRON_SOURCE", "CRON_TOOLSETS", "SessionJobRunner", "run_message"]

log = logging.getLogger("hermes_actors.platform.cron")

#: The ``source`` of every session a cron run opens.
CRON_SOURCE = "cron"
#: The tools of a cron run: the core ones, nothing that needs a person.
CRON_TOOLSETS = ("hermes-cron",)
#: How long past its time budget a run's turn may go on (its last summary) before it is interrupted.
OVERRUN_GRACE_SECONDS = 120.0


class SessionJobRunner:
    """Runs a job's turn in a fresh session (see the module's docstring).

    Args:
        sessions: the daemon's session service.
        cwd: the directory cron sessions start in.
        time_budget: a run's time budget when its job sets none (seconds).
    """

    def __init__(self, sessions: SessionService, cwd: str, time_budget: float) -> None:
        self.sessions = sessions
        self.cwd = cwd
        self.time_budget = time_budget

    async def __call__(self, job: CronJob) -> str:
        """Raises :class:`CronRunFailed`."""
        budget = job.time_budget if job.time_budget is not None else self.time_budget
        options = SessionOptions(
            cwd=self.cwd, model=job.model, source=CRON_SOURCE, interactive=False, toolsets=CRON_TOOLSETS,
            turn_time_budget_seconds=budget, turn_token_budget=job.token_budget, cron_approvals=job.approvals,
        )
        try:
            session_id = await self.sessions.create_session(options)
        except Exception as exc:  # a bad model, a missing key: the job's error, not the actor's
            raise CronRunFailed(f"its session could not start: {exc}") from exc
        try:
            return await self._turn(job, session_id, budget)
        finally:
            with trio.CancelScope(shield=True):
                try:
                    await self.sessions.close_session(session_id, "cron run over")
                except Exception as exc:
                    log.warning("cron job %s: closing session %s: %s", job.id, session_id, exc)

    async def _turn(self, job: CronJob, session_id: str, budget: float) -> str:
        handle = await self.sessions.get(session_id)
        watch = await send_watched(self.sessions, session_id, run_message(job), source=CRON_SOURCE, label=f"cron/{job.id}")
        try:
            # The turn ends itself at its budget (with a last summary); this bound is for one that cannot.
            with trio.move_on_after(budget + OVERRUN_GRACE_SECONDS) as overrun:
                while await watch.next_event() is not None:
                    pass
            if overrun.cancelled_caught:
                await handle.tell(Interrupt(requested_by=f"cron: the run's time budget of {budget:g} s"))
                raise CronRunFailed(f"it ran past its time budget of {budget:g} s")
        except TurnLost as exc:
            raise CronRunFailed(str(exc)) from exc
        finally:
            watch.close()
        outcome = watch.outcome
        assert outcome is not None
        if outcome.reason == "budget":
            said = f"; it said: {outcome.final_text}" if outcome.final_text else ""
            raise CronRunFailed(f"it ran out of its budget ({outcome.error or 'time or tokens'}){said}")
        if outcome.reason != "completed":
            raise CronRunFailed(outcome.error or f"its turn ended: {outcome.reason}")
        return outcome.final_text


def run_message(job: CronJob) -> str:
    """The user message a run starts with: the job's prompt, after an instruction to load its skills.

    The skills are loaded by the model through ``skill_view``, the one path that scans them, expands
    their variables and lets their declared variables into the session's processes.
    """
    if not job.skills:
        return job.prompt
    return f"Before you start, load these skills with skill_view and follow them: {', '.join(job.skills)}.\n\n{job.prompt}"
