"""``run``: one pass of the skills curator, a job under the ``curator`` actor.

A pass applies Hermes's rules to the agent-created skills (:func:`tools.skills.curation.plan_transitions`:
archive the long unused, mark the stale) and, when ``curator.consolidate`` is on, asks the curator's model
(``auxiliary.curator.*``, else ``auxiliary.*``, else the main model) to merge overlapping skills. The
model's calls go through :func:`tools.dispatch.dispatch`, the path and guards of the agent's own
``skill_manage``, after the curator's own check: only the skills listed may change, and a ``delete`` is
turned into an archive. Before anything changes the skills are backed up; a pass that fails (the model
errs or outlasts ``auxiliary.curator.timeout``, a file cannot be moved, the daemon stops it) is undone
from that backup and logs nothing else. Each change is logged with its reason in the learning changelog
as session ``curator``. A dry run changes nothing and returns what it would do. File work runs in
worker threads.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Collection
from datetime import datetime
from pathlib import Path
from typing import Any, Final

import attrs
import trio

from actors import Job
from actors.session import SessionModel
from config.loader import Config
from conversation.curation import CURATOR_TOOLS, curation_messages
from messages.chat import ChatMessage, ToolCall, ToolMessage, content_text
from providers.errors import ProviderError
from providers.recovery import RecoveryError
from tools.dispatch import dispatch
from tools.learning_log import LearnedChange, changes_from_call, record_changes
from tools.registry import ToolRegistry
from tools.skills import curation, usage
from tools.skills.curation import Candidate, CurationError, Transition
from tools.testing import LocalToolContext

__all__ = ["CURATOR_SESSION", "MAX_CURATION_STEPS", "CurationJob", "CurationReport"]

log = logging.getLogger("hermes_actors.platform.curator")

#: The name the curator's changes carry in the learning changelog.
CURATOR_SESSION: Final = "curator"
#: Model calls one consolidation pass may make.
MAX_CURATION_STEPS: Final = 24
#: ``skill_manage`` actions that change an existing skill: only a listed one may be their target.
_CHANGING: Final = frozenset({"patch", "edit", "write_file", "remove_file", "delete"})


@attrs.frozen
class CurationReport:
    """What one pass did, or would do (a dry run).

    Attributes:
        dry_run: nothing was changed.
        changes: each change made (or planned), with its reason.
        summary: one line for the user (the model's own summary when it ran).
        backup: the backup taken before the pass, if one was.
        error: why the pass failed and was undone (None: it did not fail).
    """

    dry_run: bool
    changes: tuple[LearnedChange, ...] = ()
    summary: str = ""
    backup: str | None = None
    error: str | None = None


class _Refused(Exception):
    """A call of the curator's model that its own rules refuse (the model is told why)."""


class CurationJob(Job[CurationReport]):
    """One curator pass; see the module's docstring.

    Args:
        home: HERMES_ACTORS_HOME.
        config: the configuration (``curator``, ``auxiliary.curator``).
        model: where the consolidation pass's requests go (its auxiliary routing).
        registry: the tool registry whose ``skill_view`` and ``skill_manage`` the pass calls.
        now: the wall clock (aware).
        dry_run: change nothing; report what would change.
        consolidate: run the model's pass (None: as ``curator.consolidate`` says).
        protected: skills never archived (a cron job names them).
    """

    kind = "curation"

    def __init__(
        self, home: Path, config: Config, model: SessionModel, registry: ToolRegistry, now: Callable[[], datetime],
        *, dry_run: bool = False, consolidate: bool | None = None, protected: Collection[str] = (),
    ) -> None:
        super().__init__()
        self.home = home
        self.config = config
        self.model = model
        self.registry = registry
        self.now = now
        self.dry_run = dry_run
        self.consolidate = config.curator.consolidate if consolidate is None else consolidate
        self.protected = frozenset(protected)
        self._backup: Path | None = None
        self._changes: list[LearnedChange] = []
        # Skills the pass may change: those listed to the model, and those it creates.
        self._listed: set[str] = set()

    async def execute(self) -> CurationReport:
        self.activity = "reading the skills"
        started = self.now()
        found = await trio.to_thread.run_sync(curation.candidates, self.home)
        planned = curation.plan_transitions(found, self.config.curator, started, self.protected)
        self._listed = set(found) - self.protected
        try:
            if self.dry_run:
                return await self._preview(found, planned, started)
            if planned or (self.consolidate and self._listed):
                await self._back_up(started)
                await self._apply(planned, started)
                if self.consolidate and self._listed:
                    await self._consolidate([found[name] for name in sorted(self._listed)])
        except (ProviderError, RecoveryError, CurationError, OSError, trio.TooSlowError) as exc:
            reason = "it took longer than auxiliary.curator.timeout" if isinstance(exc, trio.TooSlowError) else str(exc)
            summary = f"curator: failed{'' if self.dry_run else ' and undone'}: {reason}"
            if not self.dry_run:
                await self._undo(reason)
                await trio.to_thread.run_sync(self._finish, started, summary)
            return CurationReport(self.dry_run, summary=summary, backup=str(self._backup) if self._backup else None,
                                  error=reason)
        except BaseException:
            if not self.dry_run:
                with trio.CancelScope(shield=True):
                    await self._undo("the pass did not finish")
            raise
        summary = self._summary()
        await trio.to_thread.run_sync(self._finish, started, summary)
        return CurationReport(False, tuple(self._changes), summary, str(self._backup) if self._backup else None)

    async def interrupted(self) -> CurationReport:
        return CurationReport(self.dry_run, summary="curator: stopped (nothing it changed was kept)", error="stopped")

    async def _preview(self, found: dict[str, Candidate], planned: list[Transition], at: datetime) -> CurationReport:
        """A dry run: the rules' changes as planned, and the model's plan when consolidation is on."""
        stamp = at.isoformat(timespec="seconds")
        changes = [LearnedChange(stamp, CURATOR_SESSION, "skill", t.action, t.name, t.reason) for t in planned]
        summary = f"curator (dry run): {len(found)} agent-created skills, {len(changes)} changes by the rules"
        if self.consolidate and self._listed:
            messages = curation_messages([found[name] for name in sorted(self._listed)], dry_run=True)
            with trio.fail_after(self.config.auxiliary.curator.timeout):
                reply = await self._conversation(messages, {"skill_view"})
            summary += f"; the model would: {reply}"
        return CurationReport(True, tuple(changes), summary)

    async def _back_up(self, at: datetime) -> None:
        backup = self.config.curator.backup
        if not backup.enabled:
            log.info("curator: curator.backup.enabled is off; this pass cannot be undone if it fails")
            return
        self.activity = "backing up the skills"
        self._backup = await trio.to_thread.run_sync(curation.snapshot, self.home, backup.keep, at)

    async def _apply(self, planned: list[Transition], at: datetime) -> None:
        """Carry out the rules' transitions."""
        self.activity = "archiving unused skills"

        def apply() -> None:
            for transition in planned:
                if transition.action == "archive":
                    curation.archive(self.home, transition.name, at)
                    self._listed.discard(transition.name)
                else:
                    usage.set_state(self.home, transition.name, transition.action)
                self._changes.append(LearnedChange(at.isoformat(timespec="seconds"), CURATOR_SESSION, "skill",
                                                   transition.action, transition.name, transition.reason))

        await trio.to_thread.run_sync(apply)

    async def _consolidate(self, found: list[Candidate]) -> None:
        """The model's pass, abandoned (and so undone) after ``auxiliary.curator.timeout``."""
        self.activity = "consolidating skills"
        with trio.fail_after(self.config.auxiliary.curator.timeout):
            await self._conversation(curation_messages(found, dry_run=False), set(CURATOR_TOOLS))

    async def _conversation(self, messages: list[ChatMessage], offered: set[str]) -> str:
        """Talk with the curator's model until it answers without calls; its last text."""
        tools = self.registry.get_definitions(sorted(offered))
        context = LocalToolContext(home=self.home, cwd=self.home, session_id=CURATOR_SESSION, interactive=False)
        text = ""
        for _ in range(MAX_CURATION_STEPS):
            reply = await self.model.ask_auxiliary(messages, tools, self.config.auxiliary.curator)
            messages.append(reply)
            text = content_text(reply.content).strip() or text
            for call in reply.tool_calls:
                messages.append(await self._call(call, context, offered, text))
            if not reply.tool_calls:
                break
        return text

    async def _call(self, call: ToolCall, context: LocalToolContext, offered: set[str], reason: str) -> ToolMessage:
        """One call of the model: the curator's rules, then the one dispatch path (or the archive)."""
        try:
            args = json.loads(call.arguments or "{}")
        except ValueError:
            args = call.arguments  # dispatch answers the model that these are not valid arguments
        at = self.now().isoformat(timespec="seconds")
        try:
            if call.name == "skill_manage" and call.name in offered and isinstance(args, dict):
                target = str(args.get("name", ""))
                if args.get("action") in _CHANGING and target not in self._listed:
                    raise _Refused(f"{target!r} is not one of the agent-created skills listed; leave it alone.")
                if args.get("action") == "delete":
                    await trio.to_thread.run_sync(curation.archive, self.home, target, self.now())
                    self._listed.discard(target)
                    into = args.get("absorbed_into")
                    why = f"{reason} (absorbed into {into!r})" if into else reason
                    self._changes.append(LearnedChange(at, CURATOR_SESSION, "skill", "archive", target, why))
                    return ToolMessage(call.id, json.dumps({"success": True, "message": f"{target!r} archived."}),
                                       name=call.name)
        except _Refused as exc:
            return ToolMessage(call.id, json.dumps({"error": str(exc)}), name=call.name)
        reply = await dispatch(self.registry, call.name, args, context, allowed=offered)
        if reply.ok and call.name == "skill_manage" and isinstance(args, dict):
            if args.get("action") == "create":
                self._listed.add(str(args.get("name", "")))
            self._changes.extend(changes_from_call(call.name, args, session_id=CURATOR_SESSION, reason=reason, at=at))
        elif not reply.ok:
            log.info("curator: a call of %s was refused: %s", call.name, reply.error or reply.text[:200])
        return ToolMessage(call.id, reply.text, name=call.name)

    async def _undo(self, reason: str) -> None:
        """Put the skills back as the backup holds them, and say so in the log."""
        self._changes.clear()
        if self._backup is None:
            log.error("curator: the pass failed (%s) and no backup was taken; what it changed stays", reason)
            return
        try:
            await trio.to_thread.run_sync(curation.restore, self.home, self._backup)
        except CurationError as exc:
            log.error("curator: the pass failed (%s) and could not be undone: %s", reason, exc)
            return
        log.warning("curator: the pass failed (%s); the skills were restored from %s", reason, self._backup)

    def _summary(self) -> str:
        counts: dict[str, int] = {}
        for change in self._changes:
            counts[change.action] = counts.get(change.action, 0) + 1
        done = ", ".join(f"{action} {count}" for action, count in sorted(counts.items()))
        return f"curator: {done or 'nothing to change'}"

    def _finish(self, at: datetime, summary: str) -> None:
        """Log the pass's changes with their reasons and remember when it ran (blocking)."""
        record_changes(self.home, self._changes)
        curation.record_run(self.home, at, summary)
