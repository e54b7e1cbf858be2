"""More than one process serving one daemon's sessions (docs/DECISIONS.md#d-session-hosts).

- Peers: daemons sharing a PostgreSQL store. ``peering`` is the ``cluster`` actor (the peer server);
  ``handshake`` proves a peer knows the cluster's secret; ``forwarding`` sends a request for a session
  another daemon runs to it; ``peer_requests`` says which requests go to a peer first.
- ``hosts/``: session hosts, the daemon's sessions in child processes under one front.
- Leases (which process runs which session) are the store's: ``store/sqlite/leases.py``,
  ``store/postgres/leases.py``.
"""
