"""Session leases on PostgreSQL: one owner per session across hosts, lost with the holder's connection."""

from __future__ import annotations

import re

import psycopg
import pytest
import trio

from config.store import StoreConfig
from store.errors import LeaseLostError, SessionOwnedElsewhere
from store.leases import LocalLeases
from store.postgres import PostgresSessionStore
from store.records import SessionMeta


async def test_one_owner_at_a_time(postgres_url: str) -> None:
    """A second host is refused a held lease, and gets it once the first gives it back."""
    async with PostgresSessionStore.open(postgres_url) as a, PostgresSessionStore.open(postgres_url) as b:
        await a.leases.acquire("s1")
        await a.leases.acquire("s1")  # again: already held, still one lock
        with pytest.raises(SessionOwnedElsewhere, match=re.escape(f"({a.leases.name})")):
            await b.leases.acquire("s1")
        await b.leases.acquire("s2")  # other sessions are free
        await a.leases.release("s1")
        await b.leases.acquire("s1")
        assert b.leases.held() == {"s1", "s2"} and a.leases.held() == frozenset()
        with pytest.raises(SessionOwnedElsewhere):
            await a.leases.acquire("s1")


async def test_a_dead_connection_frees_its_leases_and_is_reported(postgres_url: str) -> None:
    """When a host's lease connection dies (its process killed, say), another host may take its
    sessions at once; the first host's check reports them lost and takes new leases afresh."""
    lost: list[list[str]] = []

    async def record(session_ids: list[str]) -> None:
        lost.append(session_ids)

    async with PostgresSessionStore.open(postgres_url) as a, PostgresSessionStore.open(postgres_url) as b:
        a.leases.on_lost(record)
        await a.leases.acquire("s1")
        await a.leases.acquire("s2")
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE application_name = 'hermes-actors leases'"
                " AND pid <> pg_backend_pid() AND datname = current_database()"
            )
        await b.leases.acquire("s1")
        await a.leases.check()
        assert lost == [["s1", "s2"]] and a.leases.held() == frozenset()
        await a.leases.acquire("s2")  # a new connection
        assert a.leases.held() == {"s2"}
        with pytest.raises(SessionOwnedElsewhere):
            await b.leases.acquire("s2")


async def test_the_store_checks_its_leases_while_it_runs(postgres_url: str) -> None:
    """The running store checks the lease connection every lease_check_seconds."""
    store = PostgresSessionStore(postgres_url, StoreConfig(lease_check_seconds=0.05))
    reported = trio.Event()

    async def record(session_ids: list[str]) -> None:
        assert session_ids == ["s1"]
        reported.set()

    store.leases.on_lost(record)
    async with trio.open_nursery() as nursery:
        await nursery.start(store.run)
        await store.leases.acquire("s1")
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE application_name = 'hermes-actors leases'"
                " AND datname = current_database()"
            )
        with trio.fail_after(10):
            await reported.wait()
        store.close()


async def test_local_leases_grant_everything() -> None:
    """On SQLite (one host per file) every lease is granted."""
    leases = LocalLeases()
    await leases.acquire("s1")
    await leases.acquire("s1")
    assert leases.held() == {"s1"}
    await leases.release("s1")
    assert leases.held() == frozenset()


async def test_every_host_hears_of_a_release(postgres_url: str) -> None:
    """A lease given back is told to the other hosts (NOTIFY), which forget where the session ran."""
    heard: list[str] = []
    told = trio.Event()

    def record(session_id: str) -> None:
        heard.append(session_id)
        told.set()

    async with PostgresSessionStore.open(postgres_url) as a, PostgresSessionStore.open(postgres_url) as b:
        b.leases.on_released(record)
        await a.leases.acquire("s1")
        await a.leases.acquire("s2")
        await a.leases.release("s2")
        with trio.fail_after(10):
            await told.wait()
        assert heard == ["s2"]


async def test_placement_and_holders(postgres_url: str) -> None:
    """A host hears who holds a session (by the address it advertised) and which host holds fewer leases
    than itself; ties stay put, and a host without an address is never chosen."""
    async with PostgresSessionStore.open(postgres_url) as a, PostgresSessionStore.open(postgres_url) as b:
        await a.leases.advertise("127.0.0.1:1111")
        await a.leases.acquire("s1")
        assert await b.leases.holder("s1") == "127.0.0.1:1111"
        assert await a.leases.holder("s1") is None  # its own
        assert await b.leases.holder("nobody") is None
        assert await a.leases.less_loaded_peer() is None  # b holds fewer, but has no address
        await b.leases.advertise("127.0.0.1:2222")
        assert await a.leases.less_loaded_peer() == "127.0.0.1:2222"
        assert await b.leases.less_loaded_peer() is None
        await b.leases.acquire("s2")
        assert await a.leases.less_loaded_peer() is None  # a tie stays here


async def test_the_old_owner_cannot_write_once_another_took_over(postgres_url: str) -> None:
    """Fencing: host A's lease connection dies; before A notices, B takes the session. A's next write is
    refused, nothing of it committed; B's goes through, and its history is what B wrote after A's last."""
    async with PostgresSessionStore.open(postgres_url) as a, PostgresSessionStore.open(postgres_url) as b:
        await a.create_session(SessionMeta(id="s1"))
        await a.leases.acquire("s1")
        await a.append("s1", [{"role": "user", "content": "from A, before"}])
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE application_name = 'hermes-actors leases'"
                " AND pid <> pg_backend_pid() AND datname = current_database()"
            )
        await b.leases.acquire("s1")
        with pytest.raises(LeaseLostError, match="another host has taken its lease"):
            await a.append("s1", [{"role": "user", "content": "from A, after"}])
        with pytest.raises(LeaseLostError):
            await a.save_state("s1", {"from": "A"})
        await b.append("s1", [{"role": "user", "content": "from B"}])
        loaded = await b.load("s1")
        assert [m["content"] for m in loaded.messages] == ["from A, before", "from B"]
        # A session this host never took is not fenced (a direct write, as the store's own tests make).
        await a.create_session(SessionMeta(id="s2"))
        await a.append("s2", [{"role": "user", "content": "unfenced"}])
        # Given back and taken again (A has noticed its loss by then), a lease comes with a new epoch,
        # and writes go through.
        await a.leases.check()
        await b.leases.release("s1")
        await a.leases.acquire("s1")
        await a.append("s1", [{"role": "user", "content": "from A, again"}])
