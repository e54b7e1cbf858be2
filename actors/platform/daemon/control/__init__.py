"""The ``control`` actor: the control socket's server, one actor per client connection, and what each
request does.

- ``server``: the accepting actor; ``socket_file``: the socket's file, bound private, removed at the end.
- ``connection``: one client (its hello, its requests, the sessions it attached to); ``relays``:
  attachments relayed from a peer daemon or a session host.
- ``service``: the control service, one method per request; the requests of one concern each have a
  module: ``record_commands`` (stored sessions), ``mcp_commands``, ``cron_commands``,
  ``pairing_commands``; ``summaries`` (store records as listing messages).
"""
