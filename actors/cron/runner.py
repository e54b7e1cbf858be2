"""A cron run as a session: a fresh ``cron`` session, the job's prompt as its one turn, its final
answer back to the ``cron`` actor.

The session has no one present (``interactive`` False: no ``clarify``, approvals by
``approvals.cron_mode``), the job's model when it names one, and the ``hermes-cron`` tools. It is
an ordinary session under ``sessions/``, so ``tree``, ``ps``, ``kill`` and ``interrupt`` reach it
while it runs; a turn that ends any other way than ``completed`` is a failed run. It is closed when
the run ends, and kept in the store, readable like any session.
"""

from __future__ import annotations

import logging

import trio

from actors.cron.actor import CronRunFailed
from actors.cron.jobs import CronJob
from actors.platform.api.turns import TurnLost, TurnWatch, baseline_usage
from actors.session import SessionOptions, SessionService
from messages.session import Interrupt, Subscribe

__all__ = ["CRON_SOURCE", "CRON_TOOLSETS", "SessionJobRunner", "run_message"]

log = logging.getLogger("hermes_actors.cron")

#: The ``source`` of every session a cron run opens.
CRON_SOURCE = "cron"
#: The tools of a cron run: the core ones, nothing that needs a person.
CRON_TOOLSETS = ("hermes-cron",)


class SessionJobRunner:
    """Runs a job's turn in a fresh session (see the module's docstring).

    Args:
        sessions: the daemon's session service.
        cwd: the directory cron sessions start in.
        time_budget: the longest a run may take before it is interrupted (seconds).
    """

    def __init__(self, sessions: SessionService, cwd: str, time_budget: float) -> None:
        self.sessions = sessions
        self.cwd = cwd
        self.time_budget = time_budget

    async def __call__(self, job: CronJob) -> str:
        """Raises :class:`CronRunFailed`."""
        options = SessionOptions(
            cwd=self.cwd, model=job.model, source=CRON_SOURCE, interactive=False, toolsets=CRON_TOOLSETS
        )
        try:
            session_id = await self.sessions.create_session(options)
        except Exception as exc:  # a bad model, a missing key: the job's error, not the actor's
            raise CronRunFailed(f"its session could not start: {exc}") from exc
        try:
            return await self._turn(job, session_id)
        finally:
            with trio.CancelScope(shield=True):
                try:
                    await self.sessions.close_session(session_id, "cron run over")
                except Exception as exc:
                    log.warning("cron job %s: closing session %s: %s", job.id, session_id, exc)

    async def _turn(self, job: CronJob, session_id: str) -> str:
        handle = await self.sessions.get(session_id)
        text = run_message(job)
        watch = TurnWatch(session_id, await handle.ask(Subscribe(f"cron/{job.id}")), text,
                          baseline_usage(handle.statistics().details), "started")
        try:
            await self.sessions.send(session_id, text, source=CRON_SOURCE, busy_mode="queue")
            with trio.move_on_after(self.time_budget) as budget:
                while await watch.next_event() is not None:
                    pass
            if budget.cancelled_caught:
                await handle.tell(Interrupt(requested_by=f"cron: the run's time budget of {self.time_budget:g} s"))
                raise CronRunFailed(f"it ran past its time budget of {self.time_budget:g} s")
        except TurnLost as exc:
            raise CronRunFailed(str(exc)) from exc
        finally:
            watch.close()
        outcome = watch.outcome
        assert outcome is not None
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
