"""The actor runtime's public face: what the rest of the daemon builds on.

- :class:`Actor`: a long-lived member of the tree reading one mailbox;
  :class:`Job`: a one-shot member that returns a value to whoever ran it
  (:class:`InterruptScope`: a part of its work that an interrupt ends);
  :class:`ActorBase`: what both share (``spawn``, ``run_job``, ``start_soon``).
- :class:`ActorHandle`: what others hold of a member (tell, ask, stop, inspect);
  :class:`Reply`: a one-shot answer slot, for an actor that answers later.
- The supervisor API (from the top-level ``supervisor`` module): child specs,
  strategies, restart types; and :func:`open_actor_system` (``actors.system``), which runs a tree.
- The runtime's errors.

Import from here, not from the modules behind it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # "X as X": the explicit re-export a type checker reads (``__all__`` below is computed).
    from actors.base import (
        Actor as Actor,
        ActorBase as ActorBase,
        FailureHandler as FailureHandler,
        error_record as error_record,
    )
    from actors.errors import (
        ActorError as ActorError,
        ActorFailed as ActorFailed,
        ActorNotFound as ActorNotFound,
        JobStopped as JobStopped,
        MailboxClosed as MailboxClosed,
        MailboxFull as MailboxFull,
        NoReply as NoReply,
        Rejected as Rejected,
        RestartIntensityExceeded as RestartIntensityExceeded,
        SpawnFailed as SpawnFailed,
    )
    from actors.handle import ActorHandle as ActorHandle
    from actors.job import InterruptScope as InterruptScope, Job as Job
    from actors.mailbox import Envelope as Envelope, Reply as Reply
    from actors.registry import ActorRegistry as ActorRegistry
    from actors.system import ActorSystem as ActorSystem, open_actor_system as open_actor_system
    from supervisor import (
        ChildInfo as ChildInfo,
        ChildSpec as ChildSpec,
        RestartType as RestartType,
        Strategy as Strategy,
        Supervisor as Supervisor,
        SupervisorHandle as SupervisorHandle,
    )

#: Where each public name lives. Resolved on first use: the Trio-free CLI lives
#: under this package and must not pay for the runtime, and ``supervisor`` is
#: itself built on this package.
_EXPORTS = {
    **dict.fromkeys(["Actor", "ActorBase", "FailureHandler", "error_record"], "actors.base"),
    **dict.fromkeys(
        [
            "ActorError",
            "ActorFailed",
            "ActorNotFound",
            "JobStopped",
            "MailboxClosed",
            "MailboxFull",
            "NoReply",
            "Rejected",
            "RestartIntensityExceeded",
            "SpawnFailed",
        ],
        "actors.errors",
    ),
    "ActorHandle": "actors.handle",
    **dict.fromkeys(["InterruptScope", "Job"], "actors.job"),
    **dict.fromkeys(["Envelope", "Reply"], "actors.mailbox"),
    "ActorRegistry": "actors.registry",
    **dict.fromkeys(["ChildInfo", "ChildSpec", "RestartType", "Strategy", "Supervisor", "SupervisorHandle"], "supervisor"),
    **dict.fromkeys(["ActorSystem", "open_actor_system"], "actors.system"),
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """Load a public name from its module on first use."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'actors' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    """The public names."""
    return __all__
