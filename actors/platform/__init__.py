"""The daemon and its front doors, each an actor of the tree.

- ``daemon/``: the daemon process and its wiring; ``daemon/control/``: the control server and its
  commands; ``daemon/cluster/``: peers and session hosts; ``daemon/infrastructure/``: the store and
  providers actors.
- ``api/``: the OpenAI-compatible HTTP API.
- ``gateway/``: what every messaging platform shares; ``telegram/``, ``discord/``: the two bots.
- ``cron/``: scheduled jobs, each run a session; ``outbound``: where the daemon's own messages go out;
  ``state_files``: small JSON files the platforms keep.

The command line is the top-level ``cli`` package, and what it shares with the daemon is ``control``.
Nothing is imported here.
"""
