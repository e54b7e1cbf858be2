"""The session package's face: what the daemon (``actors.platform``) and the
subagents (``actors.subagent``) build on. Import from here, not from the modules
behind it.

- :class:`SessionActor`, built from a :class:`SessionSpec` (its
  :class:`SessionOptions`, the daemon's :class:`SessionDeps`, and optionally a
  :data:`DelegateFactory`); :class:`SessionState` is what it saves.
- :class:`SessionService` / :class:`SessionsSupervisor`: the ``sessions`` tree
  and the front doors' way to create, wake, message and close sessions, with
  their errors (:class:`SessionNotFound`, :class:`TooManyRunningTurns`,
  :class:`SessionBusy`, :class:`NoTurnRunning`); :data:`TURN_NAME` names a running turn.
- What a subscriber holds (:class:`Subscription`, :class:`SubscriptionClosed`,
  :class:`EventHub`), and what delegate_task is given (:class:`ParentSession`,
  :class:`CallContext`, :func:`build_subagent_prompt`, :func:`new_session_id`).
- What the front doors ask of a session's checkpoints: :func:`serve_checkpoints` (list, diff, restore), its :class:`CheckpointOutcome` and errors (:class:`CheckpointsOff`,
  :class:`RestoreWhileBusy`).

The libraries it builds on (history, prompt, compression, budget, steer, fencing, guardrails,
validation) are the top-level ``conversation`` package.
"""

from __future__ import annotations

from actors.session.actor import SessionActor
from actors.session.checkpointing import (
    CheckpointOutcome,
    CheckpointsOff,
    RestoreWhileBusy,
    serve_checkpoints,
)
from actors.session.context import CallContext
from actors.session.errors import NoTurnRunning, SessionBusy
from actors.session.hub import EventHub, Subscription, SubscriptionClosed
from actors.session.model import SessionModel
from actors.session.options import DelegateFactory, DelegateTask, ParentSession, SessionDeps, SessionOptions, SessionSpec
from conversation.prompt import build_subagent_prompt
from actors.session.service import TURN_NAME, SessionNotFound, SessionService, SessionsSupervisor, TooManyRunningTurns
from actors.session.state import SessionState, new_session_id

__all__ = [
    "TURN_NAME",
    "CallContext",
    "CheckpointOutcome",
    "CheckpointsOff",
    "DelegateFactory",
    "DelegateTask",
    "EventHub",
    "NoTurnRunning",
    "ParentSession",
    "RestoreWhileBusy",
    "SessionActor",
    "SessionBusy",
    "SessionDeps",
    "SessionModel",
    "SessionNotFound",
    "SessionOptions",
    "SessionService",
    "SessionSpec",
    "SessionState",
    "SessionsSupervisor",
    "Subscription",
    "SubscriptionClosed",
    "TooManyRunningTurns",
    "build_subagent_prompt",
    "serve_checkpoints",
    "new_session_id",
]
