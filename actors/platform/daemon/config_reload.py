"""``config.yaml`` and ``.env`` read again for each new session, as Hermes's gateway does.

A daemon that read its files once ignored every edit until ``stop``, without a word. Now each new
session (and each ``status``) first looks at the two files' modification stamps; when either changed
they are read again, off the event loop, and the sections a session reads when it starts
(:data:`SESSION_SECTIONS`: the model, its keys, retries, fallbacks, the agent's limits ...) apply to
every session created from then on. Sessions already running keep what they started with.

The other sections shape parts built once at start (the tool registry, MCP servers, jails, the store,
the platforms, the daemon's own limits): a change to them is remembered and ``status`` says it waits for
a restart. A file that no longer loads is not applied: new sessions keep the last good configuration,
the error is logged once and ``status`` shows it.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

import attrs
import trio

from actors.session import SessionDeps
from config.errors import ConfigError
from config.loader import Config, load_config, load_env_file
from providers.recovery import ProviderConnector
from providers.recovery.keys import ProviderKeys, load_provider_keys

__all__ = ["SESSION_SECTIONS", "ConfigReloader", "ConfigState", "FileStamps"]

log = logging.getLogger("hermes_actors.daemon")

#: The sections a new session reads from its deps when it starts: applied by a reload.
SESSION_SECTIONS = (
    "model", "prompt_caching", "streaming", "auxiliary", "retry", "credential_pool", "fallback_providers",
    "agent", "compression", "tool_loop_guardrails", "display", "pricing", "checkpoints",
)

#: Builds the connector of new sessions for a configuration and its keys.
ConnectorFactory = Callable[[Config, ProviderKeys], ProviderConnector]


@attrs.frozen
class FileStamps:
    """What changes when ``config.yaml`` or ``.env`` is edited: each one's (mtime_ns, size); None: absent."""

    config: tuple[int, int] | None
    env: tuple[int, int] | None

    @classmethod
    def read(cls, home: Path) -> FileStamps:
        """The stamps of ``home``'s two files now (blocking: a stat each)."""
        return cls(_stamp(home / "config.yaml"), _stamp(home / ".env"))


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return (info.st_mtime_ns, info.st_size)


@attrs.frozen
class ConfigState:
    """What ``status`` says of the configuration.

    Attributes:
        read_at: when the files were last read (Unix seconds).
        restart_needed: the sections that changed in the file and apply only from the next start.
        refused: why the file as it is now cannot be used (new sessions keep the last good one), or None.
    """

    read_at: float
    restart_needed: tuple[str, ...] = ()
    refused: str | None = None


class ConfigReloader:
    """Re-reads the configuration when its files change; gives new sessions deps built on it.

    Args:
        home: HERMES_ACTORS_HOME.
        started: the configuration the daemon started with (its start-only sections stay in force).
        stamps: the files' stamps when ``started`` was read.
        connector: builds a connector for a configuration and its keys.
    """

    def __init__(self, home: Path, started: Config, stamps: FileStamps, connector: ConnectorFactory) -> None:
        self._home = home
        self._started = started
        self._stamps = stamps
        self._connector = connector
        # Invariant: the deps of new sessions were built from the files as they were at ``_stamps``
        # (or, when ``state.refused``, from the last good read before them).
        self.state = ConfigState(read_at=time.time())

    async def refresh(self, deps: SessionDeps) -> SessionDeps:
        """``deps`` as they should be for a new session: rebuilt when a file changed since the last read."""
        # Two stat calls on the loop itself: a few microseconds, where a trip to a worker thread costs about
        # 100 µs of CPU, and every new session (each HTTP API completion) comes this way.
        stamps = FileStamps.read(self._home)
        await trio.lowlevel.checkpoint()
        if stamps == self._stamps:
            return deps
        self._stamps = stamps
        try:
            config, environ = await trio.to_thread.run_sync(self._read)
        except ConfigError as exc:
            log.warning("config.yaml changed but cannot be used; new sessions keep the previous configuration: %s", exc)
            self.state = attrs.evolve(self.state, refused=str(exc))
            return deps
        applied = attrs.evolve(self._started, **{name: getattr(config, name) for name in SESSION_SECTIONS})
        restart = tuple(
            field.name for field in attrs.fields(Config)
            if field.name not in SESSION_SECTIONS and getattr(config, field.name) != getattr(self._started, field.name)
        )
        keys = load_provider_keys(applied, environ)
        self.state = ConfigState(read_at=time.time(), restart_needed=restart)
        if restart:
            log.warning("config.yaml: new sessions use the edited file; %s change only at the next start", ", ".join(restart))
        else:
            log.info("config.yaml or .env changed: new sessions use them")
        return attrs.evolve(deps, config=applied, keys=keys, pools=keys.pools, connector=self._connector(applied, keys))

    def _read(self) -> tuple[Config, dict[str, str]]:
        """The file's configuration and the keys' environment (the daemon's own wins over ``.env``)."""
        config = load_config(self._home)
        return config, {**load_env_file(self._home), **os.environ}
