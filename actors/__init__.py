"""The actor runtime's public face: what the rest of the daemon builds on.

- :class:`Actor`: a long-lived member of the tree reading one mailbox;
  :class:`Job`: a one-shot member that returns a value to whoever ran it;
  :class:`ActorBase`: what both share (``spawn``, ``run_job``, ``start_soon``).
- :class:`ActorHandle`: what others hold of a member (tell, ask, stop, inspect);
  :class:`Reply`: a one-shot answer slot, for an actor that answers later.
- The supervisor API (from the top-level ``supervisor`` module): child specs,
  strategies, restart types, and :func:`open_actor_system`.
- The runtime's errors.

Import from here, not from the modules behind it. The supervisor names are
resolved on first use, because ``supervisor`` itself is built on this package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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
from actors.job import Job
from actors.mailbox import Reply
from actors.registry import ActorRegistry

if TYPE_CHECKING:
    from supervisor import (
        ActorSystem,
        ChildInfo,
        ChildSpec,
        RestartType,
        Strategy,
        Supervisor,
        SupervisorHandle,
        open_actor_system,
    )

__all__ = [
    "Actor",
    "ActorBase",
    "ActorError",
    "ActorFailed",
    "ActorHandle",
    "ActorNotFound",
    "ActorRegistry",
    "ActorSystem",
    "ChildInfo",
    "ChildSpec",
    "FailureHandler",
    "Job",
    "JobStopped",
    "MailboxClosed",
    "MailboxFull",
    "NoReply",
    "Rejected",
    "Reply",
    "RestartIntensityExceeded",
    "RestartType",
    "SpawnFailed",
    "Strategy",
    "Supervisor",
    "SupervisorHandle",
    "error_record",
    "open_actor_system",
]

_FROM_SUPERVISOR = frozenset(
    {"ActorSystem", "ChildInfo", "ChildSpec", "RestartType", "Strategy", "Supervisor", "SupervisorHandle", "open_actor_system"}
)


def __getattr__(name: str) -> Any:
    if name in _FROM_SUPERVISOR:
        import supervisor

        return getattr(supervisor, name)
    raise AttributeError(f"module 'actors' has no attribute {name!r}")
