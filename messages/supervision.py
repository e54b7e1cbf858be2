"""Supervision messages: what an actor reports about itself, and the tree of them.

These cross the control socket (``hermes-actors tree``, ``inspect``), so they
hold only plain data: no handles, no exceptions, no callables.
"""

from __future__ import annotations

import enum
from typing import Any

import attrs

__all__ = ["ActorSnapshot", "ActorState", "ErrorRecord", "TreeNode"]


class ActorState(enum.Enum):
    """Where an actor is in its life."""

    STARTING = "starting"  # spawned, not yet ready: the spawner is still waiting
    RUNNING = "running"  # ready, doing its own work (a loop that is not a plain mailbox reader)
    IDLE = "idle"  # ready, waiting for a message
    BUSY = "busy"  # handling a message
    STOPPING = "stopping"  # asked to stop; its cleanup is running
    STOPPED = "stopped"  # gone after a normal exit or a stop it was asked for
    FAILED = "failed"  # gone after an exception
    RESTARTING = "restarting"  # failed and its supervisor is starting a new instance


@attrs.frozen
class ErrorRecord:
    """One failure, flattened for display: type, message, traceback text, time."""

    type: str
    message: str
    traceback: str
    at: float


@attrs.frozen
class ActorSnapshot:
    """An actor's ``statistics()``: everything the inspection commands show.

    ``details`` holds the fields a kind of actor adds (a budget, a session id,
    tool calls so far); its values are JSON-ready.
    """

    path: str
    kind: str
    state: ActorState
    activity: str
    mailbox_used: int
    mailbox_capacity: int
    restarts: int
    started_at: float
    last_error: ErrorRecord | None = None
    cancel_reason: str | None = None
    details: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen
class TreeNode:
    """An actor's snapshot with the nodes of its children, in start order."""

    snapshot: ActorSnapshot
    children: list[TreeNode] = attrs.Factory(list)

    def walk(self) -> list[ActorSnapshot]:
        """Every snapshot of this subtree, depth first, this node first."""
        out: list[ActorSnapshot] = []
        stack = [self]
        while stack:
            node = stack.pop()
            out.append(node.snapshot)
            stack.extend(reversed(node.children))
        return out
