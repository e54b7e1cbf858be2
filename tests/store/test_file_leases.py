"""Leases between the processes of one daemon on SQLite: ``flock`` locks that die with their holder."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from store.errors import SessionOwnedElsewhere, StoreIOError
from store.sqlite.leases import FileLeases

_HOLD = """
import asyncio, sys
sys.path.insert(0, {root!r})
from pathlib import Path
from store.sqlite.leases import FileLeases
leases = FileLeases(Path({directory!r}), "host:7")
asyncio.run(leases.acquire("abc123"))
print("held", flush=True)
sys.stdin.read()
"""


class TestFileLeases:
    """One holder at a time, named in the refusal, and free again once released or once its holder dies."""

    async def test_one_holder_at_a_time(self, tmp_path: Path) -> None:
        first, second = FileLeases(tmp_path / "leases", "host:1"), FileLeases(tmp_path / "leases", "host:2")
        await first.acquire("abc123")
        await first.acquire("abc123")  # again: a no-op
        with pytest.raises(SessionOwnedElsewhere) as refused:
            await second.acquire("abc123")
        assert refused.value.address == "host:1" and "host:1" in str(refused.value)
        assert first.held() == {"abc123"} and second.held() == frozenset()
        await first.release("abc123")
        await second.acquire("abc123")
        assert second.held() == {"abc123"} and first.held() == frozenset()
        assert (tmp_path / "leases").stat().st_mode & 0o777 == 0o700

    async def test_holder_is_asked_like_any_store_leases(self, tmp_path: Path) -> None:
        """``holder()`` answers (None: the front routes to its hosts itself) rather than being shadowed by
        the process's name, which peer routing would have called as a function."""
        leases = FileLeases(tmp_path / "leases", "host:1")
        await leases.acquire("abc123")
        assert await leases.holder("abc123") is None

    async def test_a_lease_dies_with_a_killed_holder(self, tmp_path: Path) -> None:
        directory = tmp_path / "leases"
        root = str(Path(__file__).resolve().parents[2])
        holder = subprocess.Popen(
            [sys.executable, "-c", _HOLD.format(root=root, directory=str(directory))],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
            mine = FileLeases(directory, "host:1")
            with pytest.raises(SessionOwnedElsewhere) as refused:
                await mine.acquire("abc123")
            assert refused.value.address == "host:7"
            holder.send_signal(signal.SIGKILL)
            holder.wait(10)
            await mine.acquire("abc123")
            assert mine.held() == {"abc123"}
        finally:
            holder.kill()
            holder.communicate()

    @pytest.mark.parametrize("bad", ["../escape", "a/b", "..", ""])
    async def test_a_session_id_never_becomes_a_path_elsewhere(self, tmp_path: Path, bad: str) -> None:
        with pytest.raises(StoreIOError):
            await FileLeases(tmp_path / "leases", "host:1").acquire(bad)
        assert not (tmp_path / "escape.lease").exists()
