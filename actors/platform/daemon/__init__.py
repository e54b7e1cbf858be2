"""The daemon: its process, the one place its tree is wired, and its actors by concept.

- The process: ``process`` (lock, signals, the bounded shutdown, :func:`run_daemon`,
  :func:`serve_daemon`), ``logs`` (one redacted line per event), ``collector`` and ``limits``
  (settings it takes as it starts).
- The wiring: ``wiring`` is the composition root that builds the whole tree from the configuration;
  ``toolbox`` (the tool registry), ``config_reload`` (configuration read again per session) and
  ``jail_status`` feed it.
- ``control/``: the control server, its connections and what each request does.
- ``cluster/``: peer daemons and session hosts.
- ``infrastructure/``: the ``store`` and ``providers`` actors.
"""

from actors.platform.daemon.process import WATCHDOG_GRACE_SECONDS, run_daemon, serve_daemon

__all__ = ["WATCHDOG_GRACE_SECONDS", "run_daemon", "serve_daemon"]
