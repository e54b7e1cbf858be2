"""Messaging platforms that plugins add (``ctx.register_platform(name, factory)``), run as the built-in ones are.

A plugin's ``factory(setup)`` builds its adapter: an actor of a :class:`PluginAdapter` (or any
``PlatformAdapter``) subclass that connects in its ``main`` and implements the gateway's ``ChatPort``
(``send_text``, ``send_choices``, ``edit_text``, ``send_file``, ``typing``, ``download``), handing each
message it receives to ``self.desk.take``. The desk gives it what every platform has: the allow lists,
pairing, ``dm_policy``, sessions per chat, the commands, approvals as buttons; ``self.up()`` makes its
chats cron's destinations (``NAME:CHAT``), and ``status`` shows its connection.

Its failures are its own. A factory that raises, or builds something that is not an adapter, leaves a
:class:`FailedPlatform` in its place: shown ``failed`` with the reason, never restarted. An adapter that
crashes is restarted by the ``platform`` supervisor, and after :data:`GIVE_UP_RESTARTS` restarts within
:data:`GIVE_UP_SECONDS` it is given up the same way. The other platforms and the daemon carry on.
"""

from __future__ import annotations

import logging
import traceback
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import trio

from actors import Actor, ActorHandle
from actors.platform.gateway.adapter import PlatformAdapter
from actors.platform.gateway.port import ChatRef
from actors.platform.outbound import Destination, OutboundRegistry, UnknownDestination
from actors.session import SessionService
from config.plugin_platform import PluginPlatformConfig
from messages.supervision import ActorState
from messages.untrusted import repair_text
from tools.plugins.context import PluginPlatform
from tools.redact import redact_secrets

__all__ = [
    "GIVE_UP_RESTARTS",
    "GIVE_UP_SECONDS",
    "PLUGIN_PLATFORM_TOOLSETS",
    "FailedPlatform",
    "PlatformSetup",
    "PluginAdapter",
    "plugin_platform_factory",
]

log = logging.getLogger("hermes_actors.platform.plugins")

#: A crashing plugin platform is given up at this many restarts within :data:`GIVE_UP_SECONDS` (the
#: ``platform`` supervisor would give it up at one more).
GIVE_UP_RESTARTS, GIVE_UP_SECONDS = 3, 60.0
#: The toolsets of a plugin platform's sessions: those of a chat with someone present.
PLUGIN_PLATFORM_TOOLSETS = ("hermes-cli",)


@attrs.frozen
class PlatformSetup:
    """What a plugin platform's factory is given.

    Attributes:
        name: the platform's name (its section ``platforms.NAME``, destinations ``NAME:CHAT``).
        section: its section; the plugin's own keys are in ``section.settings``.
        sessions / outbound / state_dir / pairing: what ``PlatformAdapter`` is built with.
    """

    name: str
    section: PluginPlatformConfig
    sessions: SessionService
    outbound: OutboundRegistry
    state_dir: Path
    pairing: Callable[[], ActorHandle[Any] | None]

    @property
    def prefix(self) -> str:
        """The prefix of its sessions' ids."""
        return f"plugin-{self.name}"


class PluginAdapter(PlatformAdapter):
    """The base of a plugin's adapter: ``PlatformAdapter`` built from a :class:`PlatformSetup`.

    Args:
        setup: what the factory was given.
    """

    kind = "plugin-platform"

    def __init__(self, setup: PlatformSetup) -> None:
        # Before the desk is built: it names its files after the platform.
        self.platform = setup.name
        super().__init__(
            setup.section, setup.sessions, setup.outbound, setup.state_dir, setup.pairing, prefix=setup.prefix,
            toolsets=PLUGIN_PLATFORM_TOOLSETS,
        )
        self.setup = setup

    def snapshot_details(self) -> dict[str, Any]:
        return self.connection_details()

    async def destination_chat(self, destination: Destination) -> ChatRef:
        """The chat a destination names (any word), or ``home_channel``.

        Raises:
            UnknownDestination: no chat named and no home channel.
        """
        chat = destination.chat if destination.chat is not None else self.setup.section.home_channel
        if chat is None:
            raise UnknownDestination(f"{self.platform} has no home_channel configured; name a chat ({self.platform}:CHAT)")
        return ChatRef(self.platform, chat, destination.thread)


class FailedPlatform(Actor[Any]):
    """Stands in for a plugin platform given up: shown failed, with why, until the daemon stops.

    Args:
        name: the platform's name.
        reason: why it failed (shown in ``status`` and ``plugins list``).
    """

    kind = "plugin-platform"

    def __init__(self, name: str, reason: str) -> None:
        super().__init__()
        self.name = name
        self.reason = reason

    def snapshot_details(self) -> dict[str, Any]:
        # A crashed adapter's last error is handed on to its stand-in by the supervisor.
        last = f" (last: {self.last_error.type}: {self.last_error.message})" if self.last_error is not None else ""
        return {"connection": "failed", "connection_error": self.reason + last, "sent": 0}

    async def main(self) -> None:
        self.state = ActorState.IDLE
        await trio.sleep_forever()


def plugin_platform_factory(platform: PluginPlatform, setup: PlatformSetup) -> Callable[[], Actor[Any]]:
    """The ``platform`` supervisor's factory of ``platform``'s child: its adapter, or a :class:`FailedPlatform`
    when its factory fails or it has crashed too often."""
    starts: deque[float] = deque()

    def make() -> Actor[Any]:
        now = trio.current_time()
        starts.append(now)
        while starts[0] < now - GIVE_UP_SECONDS:
            starts.popleft()
        if len(starts) > GIVE_UP_RESTARTS:
            return _refused(platform, f"crashed {GIVE_UP_RESTARTS + 1} times within {GIVE_UP_SECONDS:g} s; given up (the log has each error)")
        try:
            adapter = platform.factory(setup)
        except Exception as exc:
            trace = repair_text(redact_secrets("".join(traceback.format_exception(exc))))
            log.error("platform %s (plugin %s): its factory raised:\n%s", platform.name, platform.plugin, trace)
            return FailedPlatform(platform.name, repair_text(redact_secrets(f"its factory raised {type(exc).__name__}: {exc}")))
        if not isinstance(adapter, PlatformAdapter):
            return _refused(platform, f"its factory returned {type(adapter).__name__}, not a PlatformAdapter")
        if adapter.platform != platform.name:
            return _refused(platform, f"its adapter calls its platform {adapter.platform!r}, not {platform.name!r}")
        return adapter

    return make


def _refused(platform: PluginPlatform, reason: str) -> FailedPlatform:
    log.error("platform %s (plugin %s): %s", platform.name, platform.plugin, reason)
    return FailedPlatform(platform.name, reason)
