"""A pool of API keys for one provider, with cooldowns and selection strategies.

Strategies: ``fill_first`` (the first usable key, the default), ``round_robin``
(the next usable key after the last one used), ``random`` and ``least_used``
(fewest requests so far). A key that hits a limit is marked exhausted and
cools down: 5 minutes after a 401, an hour after a 429 or anything else, or
until the reset time the provider sent, which wins.

With a ``state_path`` the cooldowns, counters and round-robin cursor live in a
JSON file shared by every process using the pool; each select and each mark
re-reads it under a lock (see ``_pool_store``). Time comes from ``clock``, a
function returning epoch seconds (``time.time`` by default), so tests drive
cooldowns with Trio's mock clock.
"""

from __future__ import annotations

import hashlib
import logging
import random
import re
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import attrs
import trio

from config.recovery import STRATEGIES
from providers.recovery import _pool_store as store
from providers.recovery.errors import NoCredentialAvailable
from providers.recovery.reset_time import parse_reset_time

log = logging.getLogger(__name__)

T = TypeVar("T")

COOLDOWN_AUTH_SECONDS = 5 * 60
COOLDOWN_RATE_LIMIT_SECONDS = 60 * 60
COOLDOWN_DEFAULT_SECONDS = 60 * 60


@attrs.frozen
class Credential:
    """One API key of a provider; ``key`` is never shown in a repr or a log."""

    provider: str
    key: str = attrs.field(repr=False)
    index: int

    @property
    def fingerprint(self) -> str:
        """A stable, non-reversible id for the key (what the state file stores)."""
        return hashlib.sha256(self.key.encode("utf-8")).hexdigest()[:16]

    @property
    def label(self) -> str:
        """A name safe to show the user (``openrouter#2``)."""
        return f"{self.provider}#{self.index + 1}"


@attrs.frozen
class PoolStatistics:
    """A snapshot of the pool for inspection."""

    provider: str
    strategy: str
    size: int
    available: int
    next_available_at: float | None
    request_counts: tuple[int, ...]


def cooldown_seconds(status_code: int | None) -> int:
    """The default cooldown for a key that failed with ``status_code``."""
    if status_code == 401:
        return COOLDOWN_AUTH_SECONDS
    if status_code == 429:
        return COOLDOWN_RATE_LIMIT_SECONDS
    return COOLDOWN_DEFAULT_SECONDS


def state_path_for(home: Path, provider: str) -> Path:
    """Where the pool of ``provider`` keeps its state under ``HERMES_ACTORS_HOME``."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", provider).strip(".") or "_"
    return home / "credential_pool" / f"{safe}.json"


class CredentialPool:
    """Chooses a key of one provider for each request and cools down the ones that fail.

    Args:
        provider: the provider name.
        keys: its keys in priority order (at least one).
        strategy: one of ``fill_first``, ``round_robin``, ``random``, ``least_used``.
        state_path: the shared JSON state file, or ``None`` to keep state in memory.
        clock: returns the current time in epoch seconds.
        rng: the generator of the ``random`` strategy.

    Raises:
        ValueError: no keys, or an unknown strategy.
    """

    def __init__(
        self,
        provider: str,
        keys: Sequence[str],
        *,
        strategy: str = "fill_first",
        state_path: Path | None = None,
        clock: Callable[[], float] = time.time,
        rng: random.Random | None = None,
    ) -> None:
        if not keys:
            raise ValueError(f"credential pool for {provider!r} needs at least one key")
        if strategy not in STRATEGIES:
            raise ValueError(f"unknown credential strategy {strategy!r}; expected one of {', '.join(STRATEGIES)}")
        self.provider = provider
        self.strategy = strategy
        self.credentials = tuple(Credential(provider, key, i) for i, key in enumerate(dict.fromkeys(keys)))
        self._state_path = state_path
        self._clock = clock
        self._rng = rng or random.Random()
        # Invariant: with a state_path this is only the last copy read from
        # disk (for statistics); the file is the truth for every decision.
        self._state: store.State = store.empty_state()
        self._lock = trio.Lock()

    def __len__(self) -> int:
        return len(self.credentials)

    async def select(self) -> Credential:
        """Choose the key for the next request and count the request against it.

        Raises:
            NoCredentialAvailable: every key is cooling down.
            CredentialStoreError: the state file cannot be used.
        """
        return await self._update(partial(self._select, now=self._clock()))

    async def mark_exhausted(
        self, credential: Credential, *, status_code: int | None, reset_hint: object = None
    ) -> float:
        """Cool ``credential`` down after a failure; returns when it becomes usable (epoch s).

        ``reset_hint`` is the provider's reset time (epoch s/ms, ISO-8601 or
        seconds from now); when usable it replaces the default cooldown.
        """
        now = self._clock()
        until = parse_reset_time(reset_hint, now=now) or now + cooldown_seconds(status_code)
        await self._update(partial(self._mark, credential=credential, until=until, status_code=status_code))
        log.info("credential %s cooling down for %.0f s after status %s", credential.label, until - now, status_code)
        return until

    async def available_count(self, *, excluding: Credential | None = None) -> int:
        """How many keys are usable now (optionally not counting ``excluding``)."""
        now = self._clock()
        state = await self._read()
        return sum(1 for c in self._usable(state, now) if c != excluding)

    async def may_recover_from_rate_limit(self, current: Credential) -> bool:
        """Whether rotating away from ``current`` can help: another key exists and is usable.

        A single-key pool cannot: its caller should fall back instead of waiting.
        """
        return len(self.credentials) > 1 and await self.available_count(excluding=current) > 0

    def statistics(self) -> PoolStatistics:
        """A snapshot from the last state seen (no file access)."""
        now = self._clock()
        entries = self._state["entries"]
        waits = [e["exhausted_until"] for e in entries.values() if (e.get("exhausted_until") or 0) > now]
        return PoolStatistics(
            provider=self.provider,
            strategy=self.strategy,
            size=len(self.credentials),
            available=len(self._usable(self._state, now)),
            next_available_at=min(waits) if waits else None,
            request_counts=tuple(self._entry(self._state, c)["request_count"] for c in self.credentials),
        )

    async def _read(self) -> store.State:
        async with self._lock:
            if self._state_path is not None:
                self._state = await trio.to_thread.run_sync(store.read, self._state_path)
            return self._state

    async def _update(self, change: Callable[[store.State], T]) -> T:
        async with self._lock:
            if self._state_path is None:
                return change(self._state)
            path = self._state_path

            def locked_update() -> T:
                def apply(state: store.State) -> T:
                    result = change(state)
                    self._state = state
                    return result

                return store.update(path, apply)

            return await trio.to_thread.run_sync(locked_update)

    @staticmethod
    def _entry(state: store.State, credential: Credential) -> dict[str, Any]:
        """The credential's entry in the pool file, its missing fields filled in (values as the JSON held them)."""
        entry = state["entries"].setdefault(credential.fingerprint, {})
        entry.setdefault("exhausted_until", None)
        entry.setdefault("request_count", 0)
        entry.setdefault("last_status", None)
        return entry

    def _usable(self, state: store.State, now: float) -> list[Credential]:
        usable = []
        for credential in self.credentials:
            until = self._entry(state, credential)["exhausted_until"]
            if not isinstance(until, (int, float)) or until <= now:
                usable.append(credential)
        return usable

    def _select(self, state: store.State, *, now: float) -> Credential:
        usable = self._usable(state, now)
        if not usable:
            waits = [self._entry(state, c)["exhausted_until"] for c in self.credentials]
            raise NoCredentialAvailable(self.provider, min(w for w in waits if isinstance(w, (int, float))))
        if self.strategy == "round_robin":
            cursor = int(state.get("cursor", 0)) % len(self.credentials)
            chosen = min(usable, key=lambda c: (c.index - cursor) % len(self.credentials))
            state["cursor"] = chosen.index + 1
        elif self.strategy == "random":
            chosen = self._rng.choice(usable)
        elif self.strategy == "least_used":
            chosen = min(usable, key=lambda c: (self._entry(state, c)["request_count"], c.index))
        else:
            chosen = usable[0]
        entry = self._entry(state, chosen)
        entry["request_count"] = int(entry["request_count"]) + 1
        entry["exhausted_until"] = None
        return chosen

    def _mark(self, state: store.State, *, credential: Credential, until: float, status_code: int | None) -> None:
        entry = self._entry(state, credential)
        entry["exhausted_until"] = until
        entry["last_status"] = status_code
