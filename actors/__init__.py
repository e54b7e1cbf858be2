"""The actor runtime's public face: what the rest of the daemon builds on.

- :class:`Actor`: a long-lived member of the tree reading one mailbox;
  :class:`Job`: a one-shot member that returns a value to whoever ran it;
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
    from actors.base import Actor, ActorBase, FailureHandler, error_record  # noqa: F401 - re-exported
    from actors.errors import (  # noqa: F401 - re-exported
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
    from actors.handle import ActorHandle  # noqa: F401 - re-exported
    from actors.job import Job  # noqa: F401 - re-exported
    from actors.mailbox import Envelope, Reply  # noqa: F401 - re-exported
    from actors.registry import ActorRegistry  # noqa: F401 - re-exported
    from actors.system import ActorSystem, open_actor_system  # noqa: F401 - re-exported
    from supervisor import (  # noqa: F401 - re-exported
        ChildInfo,
        ChildSpec,
        RestartType,
        Strategy,
        Supervisor,
        SupervisorHandle,
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
    "Job": "actors.job",
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
