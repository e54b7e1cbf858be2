"""The SQL both relational stores share: SQLite (``store.sqlite``) and PostgreSQL (``store.postgres``).

The queries are written in the dialect the two have in common, with ``?`` placeholders; each store
runs them on its own connections, in its own transactions. What differs (schema, full-text search,
error codes, pooling) lives in each store's package.
"""
