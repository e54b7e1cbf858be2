"""The daemon's infrastructure actors: owners of what every session shares.

- ``store``: the ``store`` actor, which runs the session store in the tree (SQLite's single writer, or
  PostgreSQL's connection pool).
- ``providers``: the ``providers`` actor, owner of the shared HTTP clients.
"""
