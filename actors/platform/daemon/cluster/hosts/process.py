"""A session-host process: the daemon's actor tree without its front doors, serving the front on a socket.

The front starts it with a pipe as standard input and waits for ``ready`` on its standard output.
It shares the front's home, configuration, log (its standard error, each line labelled
``host:<n>``), runtime directory and store; the instance lock stays the front's. It stops on SIGTERM
or when its standard input ends (the front is gone, ``kill -9`` included).
"""

from __future__ import annotations

import logging
import os
import sys

import trio

from actors import ActorError
from actors.platform.daemon.collector import freeze_startup_heap, tune_collector
from actors.platform.daemon.cluster.hosts.paths import HostPaths
from actors.platform.daemon.logs import configure_logging, install_safe_stdio
from control.errors import EXIT_FAILURE, EXIT_NOT_FOUND, PlatformError
from control.paths import home_from_env
from config.loader import ConfigError, load_config
from store.errors import StoreError

__all__ = ["FRONT_ADDRESS_VARIABLE", "READY_LINE", "run_host"]

log = logging.getLogger("hermes_actors.host")

#: What a host writes on its standard output once it serves.
READY_LINE = b"ready\n"
#: Where peer daemons reach the front (``daemon.cluster_listen``), which a host registers with its leases.
FRONT_ADDRESS_VARIABLE = "HERMES_ACTORS_FRONT_ADDRESS"


def run_host(index: int) -> int:
    """Run host ``index`` of the daemon of ``HERMES_ACTORS_HOME`` until stopped; the exit status."""
    from actors.platform.daemon.process import serve_daemon

    install_safe_stdio()
    tune_collector()
    configure_logging(sys.stderr, label=f"host:{index}")
    paths = HostPaths(home_from_env(), index)
    try:
        config = load_config(paths.home)
    except (ConfigError, OSError) as exc:
        log.error("cannot start: %s", exc)
        return EXIT_NOT_FOUND

    def ready() -> None:
        freeze_startup_heap()
        os.write(1, READY_LINE)

    status = 0
    try:
        trio.run(lambda: serve_daemon(paths, config, host_index=index, on_ready=ready, on_overrun=lambda: os._exit(1)))
    except* (PlatformError, StoreError, ActorError) as group:
        for error in group.exceptions:
            log.error("host failed: %s", error)
        status = EXIT_FAILURE
    return status
