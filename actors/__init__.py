"""The actor runtime's public face: what every actor is built on.

- :class:`Actor`: a long-lived member of the tree reading one mailbox;
  :class:`Job`: a one-shot member that returns a value to whoever ran it;
  :class:`ActorBase`: what both share (``spawn``, ``run_job``, ``start_soon``).
- :class:`ActorHandle`: what others hold of a member (tell, ask, stop, inspect);
  :class:`Reply`: a one-shot answer slot, for an actor that answers later.
- :class:`ActorRegistry`: the live members by path; the runtime's errors.

Supervision (child specs, strategies, :func:`open_actor_system`) is the top-level ``supervisor`` module,
built on this one; this package never imports it. The subpackages (``session``, ``subagent``,
``sandbox``, ``mcp``, ``platform``) are the actors themselves.

Import from here, not from the modules behind it.
"""

from __future__ import annotations

from actors.base import Actor, ActorBase, FailureHandler, error_record
from actors.errors import (
    ActorError,
    ActorFailed,
    ActorNotFound,
    JobStopped,
    MailboxClosed,
    MailboxFull,
    NoReply,
    Rejected,
    RestartIntensityExceeded,
    SpawnFailed,
)
from actors.handle import ActorHandle
from actors.job import InterruptScope, Job
from actors.mailbox import Envelope, Reply
from actors.registry import ActorRegistry

__all__ = [
    "Actor",
    "ActorBase",
    "ActorError",
    "ActorFailed",
    "ActorHandle",
    "ActorNotFound",
    "ActorRegistry",
    "Envelope",
    "FailureHandler",
    "InterruptScope",
    "Job",
    "JobStopped",
    "MailboxClosed",
    "MailboxFull",
    "NoReply",
    "Rejected",
    "Reply",
    "RestartIntensityExceeded",
    "SpawnFailed",
    "error_record",
]
