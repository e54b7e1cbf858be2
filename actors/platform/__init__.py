"""The daemon's front doors, split by concern.

- ``daemon/``: the daemon process, its composition root, its infrastructure actors and the
  control-socket server (Trio).
- ``cli/``: the ``hermes-actors`` command line, a Trio-free client of the control socket.
- ``api/``: the OpenAI-compatible HTTP API, an actor of the daemon's tree.
- ``cron/``: scheduled jobs, each run a session; ``markup/`` and ``outbound``: replies rendered for
  messaging platforms, and where the daemon's own messages go out.
- Shared by the daemon and the CLI: ``paths`` (where the files are), ``errors`` (the error tree
  and exit statuses), ``lock`` (the instance and start locks).

Nothing is imported here, so ``hermes-actors tree`` loads only what it uses.
"""
