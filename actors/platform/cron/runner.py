"""A cron run as a session: a fresh ``cron`` session, the job's prompt as its one turn, its final
answer back to the ``cron`` actor.

The session has no one present (``interactive`` False: no ``clarify``, approvals by the job's own
setting, else ``approvals.cron_mode``), the job's model and provider when it names them, the job's toolsets
or else the ``hermes-cron`` ones (never ``cronjob``, ``send_message`` or ``clarify``: a run schedules no
more work, and its answer is delivered for it), and the job's working directory. As in Hermes, a job's
script runs first (jailed, :mod:`~actors.platform.cron.script`): its output is the turn's context, an empty
output means nothing to report (no turn), a failure is put to the model to report; with ``no_agent`` the
script is the whole run and its output the answer. The latest answers of the job's ``context_from`` jobs
come before its prompt. It is an ordinary session under ``sessions/``, so ``tree``, ``ps``, ``kill`` and ``interrupt`` reach it
while it runs; a turn that ends any other way than ``completed`` is a failed run. It is closed when
the run ends, and kept in the store, readable like any session.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

import trio

from actors.platform.cron.actor import CronRunFailed
from actors.platform.cron.jobs import CronJob
from actors.platform.cron.script import CronScripts, ScriptRun
from actors.platform.api.turns import TurnLost, send_watched
from actors.session import SessionOptions, SessionService
from messages.session import Interrupt

__all__ = ["CRON_SOURCE", "CRON_TOOLSETS", "SessionJobRunner", "run_message"]

log = logging.getLogger("hermes_actors.platform.cron")

#: The ``source`` of every session a cron run opens.
CRON_SOURCE = "cron"
#: The tools of a cron run: the core ones, nothing that needs a person.
CRON_TOOLSETS = ("hermes-cron",)
#: Never offered to a run, whatever toolsets its job names (Hermes's cron disables them too).
CRON_BLOCKED_TOOLS = frozenset({"cronjob", "send_message", "clarify"})
#: How long past its time budget a run's turn may go on (its last summary) before it is interrupted.
OVERRUN_GRACE_SECONDS = 120.0


class SessionJobRunner:
    """Runs a job's turn in a fresh session (see the module's docstring).

    Args:
        sessions: the daemon's session service.
        cwd: the directory cron sessions start in when the job names none.
        time_budget: a run's time budget when its job sets none (seconds).
        scripts: runs jobs' scripts.
    """

    def __init__(self, sessions: SessionService, cwd: str, time_budget: float, scripts: CronScripts) -> None:
        self.sessions = sessions
        self.cwd = cwd
        self.time_budget = time_budget
        self.scripts = scripts

    async def __call__(self, job: CronJob, upstream: Mapping[str, str]) -> str | None:
        """Raises :class:`CronRunFailed`."""
        cwd = job.workdir or self.cwd
        script = await self.scripts.run(job.script, cwd) if job.script else None
        if job.no_agent:
            if script is None or not script.ok:
                raise CronRunFailed(script.output if script is not None else "a no_agent job needs a script")
            return script.output or None
        if script is not None and script.ok and not script.output:
            return None  # the script found nothing to report: no turn (Hermes's watchdog pattern)
        budget = job.time_budget if job.time_budget is not None else self.time_budget
        options = SessionOptions(
            cwd=cwd, model=job.model, provider=job.provider, source=CRON_SOURCE, interactive=False,
            toolsets=job.toolsets or CRON_TOOLSETS, blocked_tools=CRON_BLOCKED_TOOLS,
            turn_time_budget_seconds=budget, turn_token_budget=job.token_budget, cron_approvals=job.approvals,
        )
        try:
            session_id = await self.sessions.create_session(options)
        except Exception as exc:  # a bad model, a missing key: the job's error, not the actor's
            raise CronRunFailed(f"its session could not start: {exc}") from exc
        try:
            return await self._turn(job, session_id, budget, run_message(job, upstream, script))
        finally:
            with trio.CancelScope(shield=True):
                try:
                    await self.sessions.close_session(session_id, "cron run over")
                except Exception as exc:
                    log.warning("cron job %s: closing session %s: %s", job.id, session_id, exc)

    async def _turn(self, job: CronJob, session_id: str, budget: float, message: str) -> str:
        handle = await self.sessions.get(session_id)
        watch = await send_watched(self.sessions, session_id, message, source=CRON_SOURCE, label=f"cron/{job.id}")
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


def run_message(job: CronJob, upstream: Mapping[str, str] | None = None, script: ScriptRun | None = None) -> str:
    """The user message a run starts with: an instruction to load the job's skills, the latest answers
    of its ``context_from`` jobs, its script's output (or failure), then its prompt.

    The skills are loaded by the model through ``skill_view``, the one path that scans them, expands
    their variables and lets their declared variables into the session's processes.
    """
    parts = []
    if job.skills:
        parts.append(f"Before you start, load these skills with skill_view and follow them: {', '.join(job.skills)}.")
    for source, answer in (upstream or {}).items():
        parts.append(f"## The latest answer of the job {source}\n\n```\n{answer}\n```")
    if script is not None and script.ok:
        parts.append(f"## Script output\nThe job's script collected this; use it as context.\n\n```\n{script.output}\n```")
    elif script is not None:
        parts.append(f"## Script error\nThe job's script failed; tell the user.\n\n```\n{script.output}\n```")
    return "\n\n".join([*parts, job.prompt])
