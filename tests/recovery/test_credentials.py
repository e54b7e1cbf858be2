"""Credential pools: strategies, cooldowns on a mock clock, and state shared through a file."""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import random
import stat
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest
import trio
import trio.testing

from config.recovery import CredentialPoolConfig
from providers.recovery import CredentialPool, NoCredentialAvailable, keys_from_env, parse_reset_time, state_path_for

EPOCH = 1_800_000_000.0
KEYS = ["sk-key-one-aaaaaaaaaaaa", "sk-key-two-bbbbbbbbbbbb", "sk-key-three-cccccccccc"]


def mock_epoch() -> Callable[[], float]:
    """Epoch seconds that move with Trio's (mock) clock."""
    return lambda: EPOCH + trio.current_time()


async def picks(pool: CredentialPool, n: int) -> list[int]:
    return [(await pool.select()).index for _ in range(n)]


class TestStrategies:
    """Each strategy chooses among usable keys its own way."""

    async def test_fill_first_sticks_to_the_first_key(self, mock_clock: trio.testing.MockClock) -> None:
        pool = CredentialPool("p", KEYS, clock=mock_epoch())
        assert [0, 0, 0] == await picks(pool, 3)

    async def test_round_robin_rotates_and_skips_exhausted(self, mock_clock: trio.testing.MockClock) -> None:
        pool = CredentialPool("p", KEYS, strategy="round_robin", clock=mock_epoch())
        assert [0, 1, 2, 0] == await picks(pool, 4)
        await pool.mark_exhausted(pool.credentials[2], status_code=429)
        assert [1, 0, 1] == await picks(pool, 3)

    async def test_random_only_picks_usable_keys(self, mock_clock: trio.testing.MockClock) -> None:
        pool = CredentialPool("p", KEYS, strategy="random", clock=mock_epoch(), rng=random.Random(3))
        assert {0, 1, 2} == set(await picks(pool, 40))
        await pool.mark_exhausted(pool.credentials[1], status_code=429)
        assert {0, 2} == set(await picks(pool, 40))

    async def test_least_used_balances_counts(self, mock_clock: trio.testing.MockClock) -> None:
        pool = CredentialPool("p", KEYS, strategy="least_used", clock=mock_epoch())
        await picks(pool, 7)
        assert (3, 2, 2) == pool.statistics().request_counts

    def test_bad_arguments(self) -> None:
        with pytest.raises(ValueError):
            CredentialPool("p", [])
        with pytest.raises(ValueError):
            CredentialPool("p", KEYS, strategy="best")


class TestCooldowns:
    """Exhausted keys come back after 5 min (401), 1 h (429, default) or the provider's reset time."""

    @pytest.mark.parametrize(("status", "seconds"), [(401, 300), (429, 3600), (402, 3600), (None, 3600)])
    async def test_default_cooldown(self, mock_clock: trio.testing.MockClock, status: int | None, seconds: int) -> None:
        pool = CredentialPool("p", KEYS[:2], clock=mock_epoch())
        until = await pool.mark_exhausted(pool.credentials[0], status_code=status)
        assert until == pytest.approx(EPOCH + seconds)
        mock_clock.jump(seconds - 1)
        assert 1 == (await pool.select()).index
        mock_clock.jump(2)
        assert 0 == (await pool.select()).index

    @pytest.mark.parametrize(
        "hint",
        [EPOCH + 90, (EPOCH + 90) * 1000, str(int(EPOCH + 90)), dt.datetime.fromtimestamp(EPOCH + 90, dt.timezone.utc).isoformat().replace("+00:00", "Z"), 90],
        ids=["epoch-s", "epoch-ms", "epoch-s-string", "iso-8601", "relative-seconds"],
    )
    async def test_provider_reset_time_wins(self, mock_clock: trio.testing.MockClock, hint: object) -> None:
        pool = CredentialPool("p", KEYS[:2], clock=mock_epoch())
        until = await pool.mark_exhausted(pool.credentials[0], status_code=429, reset_hint=hint)
        assert until == pytest.approx(EPOCH + 90)
        mock_clock.jump(91)
        assert 0 == (await pool.select()).index

    async def test_all_cooling_down_raises_with_retry_time(self, mock_clock: trio.testing.MockClock) -> None:
        pool = CredentialPool("p", KEYS[:2], clock=mock_epoch())
        await pool.mark_exhausted(pool.credentials[0], status_code=401)
        await pool.mark_exhausted(pool.credentials[1], status_code=429)
        with pytest.raises(NoCredentialAvailable) as info:
            await pool.select()
        assert info.value.retry_at == pytest.approx(EPOCH + 300)
        assert pool.statistics().available == 0

    async def test_single_key_pool_cannot_recover_from_rate_limit(self, mock_clock: trio.testing.MockClock) -> None:
        single = CredentialPool("p", KEYS[:1], clock=mock_epoch())
        assert not await single.may_recover_from_rate_limit(single.credentials[0])
        pair = CredentialPool("p", KEYS[:2], clock=mock_epoch())
        assert await pair.may_recover_from_rate_limit(pair.credentials[0])
        await pair.mark_exhausted(pair.credentials[1], status_code=429)
        assert not await pair.may_recover_from_rate_limit(pair.credentials[0])


class TestParseResetTime:
    """Reset times in the past or unreadable are ignored."""

    @pytest.mark.parametrize("value", [None, True, "soon", EPOCH - 5, "2001-01-01T00:00:00Z", -3, float("nan"), [1]])
    def test_ignored(self, value: object) -> None:
        assert parse_reset_time(value, now=EPOCH) is None

    def test_naive_iso_is_utc(self) -> None:
        naive = dt.datetime.fromtimestamp(EPOCH + 60, dt.timezone.utc).replace(tzinfo=None).isoformat()
        assert parse_reset_time(naive, now=EPOCH) == pytest.approx(EPOCH + 60)


class TestPersistence:
    """State lives in one file that every pool re-reads under a lock; it never holds a key."""

    async def test_two_pools_share_cooldowns_and_cursor(self, tmp_path: Path, mock_clock: trio.testing.MockClock) -> None:
        path = tmp_path / "pools" / "p.json"
        a = CredentialPool("p", KEYS, strategy="round_robin", state_path=path, clock=mock_epoch())
        b = CredentialPool("p", KEYS, strategy="round_robin", state_path=path, clock=mock_epoch())
        assert [0, 1] == [(await a.select()).index, (await b.select()).index]
        await a.mark_exhausted(a.credentials[2], status_code=429)
        assert 0 == (await b.select()).index  # b skips key 3 and continues a's rotation

    async def test_file_is_private_and_holds_no_keys(self, tmp_path: Path, mock_clock: trio.testing.MockClock) -> None:
        path = tmp_path / "pools" / "p.json"
        pool = CredentialPool("p", KEYS, state_path=path, clock=mock_epoch())
        await pool.mark_exhausted(pool.credentials[0], status_code=401)
        text = path.read_text()
        assert not any(key in text for key in KEYS)
        assert pool.credentials[0].fingerprint in json.loads(text)["entries"]
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []

    async def test_corrupt_file_starts_fresh(self, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
        path = tmp_path / "p.json"
        path.write_text("{not json")
        pool = CredentialPool("p", KEYS, state_path=path)
        with caplog.at_level(logging.WARNING):
            assert 0 == (await pool.select()).index
        assert "not valid JSON" in caplog.text
        assert json.loads(path.read_text())["entries"]

    async def test_processes_share_counts_and_cooldowns(self, tmp_path: Path) -> None:
        path = tmp_path / "p.json"
        child = (
            "import sys, trio, pathlib\n"
            "from providers.recovery.credentials import CredentialPool\n"
            "async def main():\n"
            "    pool = CredentialPool('p', sys.argv[3:], strategy='round_robin', state_path=pathlib.Path(sys.argv[1]))\n"
            "    for _ in range(15):\n"
            "        await pool.select()\n"
            "    if sys.argv[2] == 'exhaust':\n"
            "        await pool.mark_exhausted(pool.credentials[0], status_code=429)\n"
            "trio.run(main)\n"
        )
        async with trio.open_nursery() as nursery:
            for role in ("exhaust", "count"):
                command = [sys.executable, "-c", child, str(path), role, *KEYS]
                nursery.start_soon(partial(trio.run_process, command, cwd=os.getcwd()))
        entries = json.loads(path.read_text())["entries"]
        # Exact total: no read-modify-write of one process overwrote the other's.
        assert 30 == sum(e["request_count"] for e in entries.values())
        pool = CredentialPool("p", KEYS, state_path=path)
        assert 0 != (await pool.select()).index  # the other process's cooldown holds here
        assert pool.statistics().next_available_at is not None


class TestStatePath:
    """Each provider's state file sits under the home, with a safe file name."""

    def test_paths(self, tmp_path: Path) -> None:
        assert state_path_for(tmp_path, "openrouter") == tmp_path / "credential_pool" / "openrouter.json"
        assert state_path_for(tmp_path, "../../etc/x").parent == tmp_path / "credential_pool"

    async def test_checking_availability_does_not_write(self, tmp_path: Path) -> None:
        path = tmp_path / "p.json"
        pool = CredentialPool("p", KEYS, state_path=path)
        assert 3 == await pool.available_count()
        assert not path.exists()


class TestKeysFromEnv:
    """Keys come from the provider's variable, then the configured extras, without duplicates."""

    def test_order_and_dedup(self) -> None:
        config = CredentialPoolConfig(extra_keys={"openrouter": ["OR_2", "OR_3", "OR_MISSING"]})
        env = {"OPENROUTER_API_KEY": "k1", "OR_2": " k2 ", "OR_3": "k1"}
        assert ["k1", "k2"] == keys_from_env("openrouter", "OPENROUTER_API_KEY", config, env)

    def test_credential_repr_hides_key(self) -> None:
        pool = CredentialPool("p", KEYS[:1])
        assert KEYS[0] not in repr(pool.credentials[0])
        assert pool.credentials[0].label == "p#1"
