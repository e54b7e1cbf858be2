"""Starting the ``sessions`` part of the tree for the daemon."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from actors.platform.backend import SessionsBackend
from config.loader import Config
from messages.control import CreateSession
from store.protocol import SessionStore
from supervisor import ActorSystem

__all__ = ["SessionsParts", "start_sessions"]


@attrs.frozen
class SessionsParts:
    """What the control service needs of the sessions: the service and an options builder."""

    backend: SessionsBackend
    options: Callable[[CreateSession], Any]


async def start_sessions(system: ActorSystem, store: SessionStore, config: Config, home: Path) -> SessionsParts | None:
    """Start the ``sessions`` supervisor under the root; None when this build has no session service."""
    return None
