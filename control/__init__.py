"""What both ends of the control socket share: the daemon (``actors/platform/daemon/``) and its clients
(the ``cli``, a session host's link, a peer).

- ``paths``: where the daemon keeps its files under ``HERMES_ACTORS_HOME`` (the socket, the lock, logs).
- ``errors``: the error tree of the daemon, its socket and its clients, with the CLI's exit statuses.
- ``lock``: one daemon per home, and the lock a background start takes.
- ``client``: the blocking control-socket client.

Nothing here imports Trio or the actor runtime: the CLI finds and starts a daemon with it before
anything heavier is loaded. The messages themselves are in ``messages/``.
"""
