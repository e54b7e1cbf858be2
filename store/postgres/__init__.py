"""The PostgreSQL session store (``store.url: postgresql://…``), for session hosts sharing one database."""

from store.postgres.store import PostgresSessionStore, redacted_url

__all__ = ["PostgresSessionStore", "redacted_url"]
