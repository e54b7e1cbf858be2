"""Typed messages of every conversation in hermes-actors, and the one wire codec.

Each conversation module defines its frozen attrs classes and one union; the
unions that cross a socket are listed in :data:`WIRE_UNIONS`, which the codec
round-trip test walks so a new message is tested the day it is added.
"""

from __future__ import annotations

from typing import Any

from messages.control import ClientMessage, DaemonMessage
from messages.events import SessionEvent
from messages.supervision import TreeNode

#: Every union (or single class) that crosses a process boundary.
WIRE_UNIONS: tuple[Any, ...] = (TreeNode, SessionEvent, ClientMessage, DaemonMessage)
