"""The daemon: its process, the one place its tree is wired, and the control server.

- The process: ``process`` (lock, signals, the bounded shutdown, :func:`run_daemon`,
  :func:`serve_daemon`) and ``logs`` (one redacted line per event).
- The wiring: ``wiring`` is the composition root that builds the whole tree (store, providers,
  sessions, control, the HTTP API) from the configuration; ``toolbox`` (the tool registry),
  ``credentials`` (provider keys) and ``jail_status`` feed it.
- Infrastructure actors: ``store_actor``, ``providers_actor``.
- The control server: ``control_socket`` (the socket file), ``control_server`` (the accepting
  actor), ``control_connection`` (one actor per client), ``control_service`` (what each request
  does) and ``summaries`` (store records as listing messages).
"""

from actors.platform.daemon.process import WATCHDOG_GRACE_SECONDS, run_daemon, serve_daemon

__all__ = ["WATCHDOG_GRACE_SECONDS", "run_daemon", "serve_daemon"]
