"""The pairing book: codes issued, reused, capped, expired and approved; the file kept private and
read back; an unreadable file set aside rather than lost."""

from __future__ import annotations

import json
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from actors import ActorHandle
from actors.platform.gateway.pairing import (
    CODE_ALPHABET,
    CODE_LIFETIME,
    MAX_WAITING,
    ApproveCode,
    CheckUser,
    ListPairings,
    PairingActor,
    RequestCode,
    RevokeUser,
    TooManyWaiting,
    UnknownCode,
)
from supervisor import open_actor_system
from supervisor import ChildSpec


class Clock:
    """Unix time the test moves."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@asynccontextmanager
async def pairing(path: Path, clock: Clock) -> AsyncIterator[ActorHandle[object]]:
    async with open_actor_system([ChildSpec("pairing", lambda: PairingActor(path, clock))]) as system:
        yield system.lookup("pairing")


def ask_in(user: str, platform: str = "telegram") -> RequestCode:
    return RequestCode(platform, user, f"User {user}", f"chat-{user}")


class TestPairing:
    async def test_a_code_is_issued_reused_and_approved(self, tmp_path: Path) -> None:
        path, clock = tmp_path / "state" / "pairing.json", Clock()
        async with pairing(path, clock) as book:
            code = await book.ask(ask_in("7"))
            assert len(code.code) == 8 and set(code.code) <= set(CODE_ALPHABET)
            assert await book.ask(ask_in("7")) == code  # asking again: the same code
            assert not await book.ask(CheckUser("telegram", "7"))
            user = await book.ask(ApproveCode(f" {code.code.lower()} "))
            assert (user.platform, user.user_id, user.chat_id) == ("telegram", "7", "chat-7")
            assert await book.ask(CheckUser("telegram", "7"))
            assert not await book.ask(CheckUser("discord", "7"))  # paired on one platform only
            with pytest.raises(UnknownCode):
                await book.ask(ApproveCode(code.code))  # used up
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        async with pairing(path, clock) as book:  # read back by the next daemon
            assert await book.ask(CheckUser("telegram", "7"))
            assert await book.ask(RevokeUser("telegram", "7"))
            assert not await book.ask(RevokeUser("telegram", "7"))
            assert not await book.ask(CheckUser("telegram", "7"))

    async def test_waiting_codes_are_capped_per_platform_and_expire(self, tmp_path: Path) -> None:
        clock = Clock()
        async with pairing(tmp_path / "pairing.json", clock) as book:
            codes = [await book.ask(ask_in(str(n))) for n in range(MAX_WAITING)]
            with pytest.raises(TooManyWaiting):
                await book.ask(ask_in("crowd"))
            await book.ask(ask_in("crowd", platform="discord"))  # another platform has its own room
            clock.now += CODE_LIFETIME + 1
            listing = await book.ask(ListPairings())
            assert listing.pending == ()
            with pytest.raises(UnknownCode, match="expire"):
                await book.ask(ApproveCode(codes[0].code))
            assert (await book.ask(ask_in("crowd"))).code not in {c.code for c in codes}

    async def test_an_unreadable_file_is_set_aside(self, tmp_path: Path) -> None:
        path = tmp_path / "pairing.json"
        path.write_text(json.dumps({"paired": "not a list"}))
        async with pairing(path, Clock()) as book:
            assert (await book.ask(ListPairings())).paired == ()
        assert (tmp_path / "pairing.unreadable").read_text() == json.dumps({"paired": "not a list"})
