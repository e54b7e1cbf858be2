"""``pairing``: who, beyond a platform's ``allow_from``, may talk to the agent.

A stranger who writes to the bot in a direct message gets a one-time code instead of the model; the
owner approves it with ``hermes-actors pairing approve CODE``, and from then on that user is let in on
that platform. Codes are eight characters from an alphabet without look-alikes, live an hour, and at
most three wait per platform (so a crowd of strangers cannot fill the book); asking again while a code
waits gives the same code.

Messages: :class:`CheckUser`, :class:`RequestCode`, :class:`ApproveCode`, :class:`RevokeUser`,
:class:`ListPairings`. State: the waiting codes and the approved users, kept in a JSON file (0600)
written after every change. Loop: the default one, a message at a time.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import cattrs
import trio

from actors import Actor, Rejected
from actors.platform.state_files import write_json
from messages.request import Request

__all__ = [
    "CODE_ALPHABET",
    "CODE_LIFETIME",
    "MAX_WAITING",
    "PAIRING",
    "ApproveCode",
    "CheckUser",
    "ListPairings",
    "PairedUser",
    "PairingActor",
    "PairingBook",
    "PendingCode",
    "RequestCode",
    "RevokeUser",
    "TooManyWaiting",
    "UnknownCode",
]

log = logging.getLogger("hermes_actors.platform.pairing")

#: The actor's name under the root.
PAIRING = "pairing"
CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 8
#: Seconds a code waits for the owner.
CODE_LIFETIME = 3600.0
#: Codes that may wait at once on one platform.
MAX_WAITING = 3


# -- messages -------------------------------------------------------------------------------------


@attrs.frozen
class CheckUser(Request[bool]):
    """The reply is True when the user was paired on the platform."""

    platform: str
    user_id: str


@attrs.frozen
class RequestCode(Request["PendingCode"]):
    """A stranger asks in; the reply is their :class:`PendingCode` (the one already waiting, if any).

    Refused with :class:`TooManyWaiting` when the platform has :data:`MAX_WAITING` codes waiting.
    """

    platform: str
    user_id: str
    user_name: str
    chat_id: str


@attrs.frozen
class ApproveCode(Request["PairedUser"]):
    """The owner lets a code's user in; the reply is the :class:`PairedUser`. Refused with
    :class:`UnknownCode` for a code that never was, or has expired."""

    code: str


@attrs.frozen
class RevokeUser(Request[bool]):
    """Forget a paired user; the reply is True when there was one."""

    platform: str
    user_id: str


@attrs.frozen
class ListPairings(Request["PairingBook"]):
    """The reply is the :class:`PairingBook` (codes still waiting, and the paired users)."""


PairingMessage = CheckUser | RequestCode | ApproveCode | RevokeUser | ListPairings


class UnknownCode(LookupError):
    """No code like that is waiting (never issued, already used, or expired)."""


class TooManyWaiting(RuntimeError):
    """The platform has as many codes waiting as it may; a new stranger must wait for the owner."""


# -- state ----------------------------------------------------------------------------------------


@attrs.frozen
class PendingCode:
    """A code waiting for the owner: who asked, from which chat, and when (Unix seconds)."""

    code: str
    platform: str
    user_id: str
    user_name: str
    chat_id: str
    created_at: float


@attrs.frozen
class PairedUser:
    """A user let in on a platform, and when (Unix seconds)."""

    platform: str
    user_id: str
    user_name: str
    chat_id: str
    approved_at: float


@attrs.frozen
class PairingBook:
    """What the pairing file holds."""

    pending: tuple[PendingCode, ...] = ()
    paired: tuple[PairedUser, ...] = ()


_converter = cattrs.Converter()


def _load(path: Path) -> PairingBook:
    try:
        return _converter.structure(json.loads(path.read_text(encoding="utf-8")), PairingBook)
    except FileNotFoundError:
        return PairingBook()
    except (OSError, ValueError, TypeError, cattrs.BaseValidationError) as exc:
        # Kept aside rather than overwritten: the owner's approvals are worth a look by hand.
        aside = path.with_suffix(".unreadable")
        os.replace(path, aside)
        log.error("the pairing file could not be read (%s); moved to %s, starting empty", exc, aside.name)
        return PairingBook()


def _save(path: Path, book: PairingBook) -> None:
    write_json(path, _converter.unstructure(book))


# -- the actor ------------------------------------------------------------------------------------


class PairingActor(Actor[PairingMessage]):
    """Keeps the pairing book; see the module's docstring.

    Args:
        path: the pairing file (``HERMES_ACTORS_HOME/state/pairing.json``).
        clock: Unix time (tests move it).
    """

    kind = "pairing"

    def __init__(self, path: Path, clock: Callable[[], float] = time.time) -> None:
        super().__init__()
        self.file = path
        self.clock = clock
        self.book = PairingBook()

    def snapshot_details(self) -> dict[str, Any]:
        return {"waiting": len(self._waiting()), "paired": len(self.book.paired)}

    async def on_start(self) -> None:
        self.book = await trio.to_thread.run_sync(_load, self.file)

    async def handle(self, message: PairingMessage) -> Any:
        match message:
            case CheckUser(platform=platform, user_id=user_id):
                return any(user.platform == platform and user.user_id == user_id for user in self.book.paired)
            case RequestCode():
                return await self._request(message)
            case ApproveCode(code=code):
                return await self._approve(code.strip().upper())
            case RevokeUser(platform=platform, user_id=user_id):
                kept = tuple(u for u in self.book.paired if (u.platform, u.user_id) != (platform, user_id))
                if len(kept) == len(self.book.paired):
                    return False
                await self._keep(attrs.evolve(self.book, paired=kept))
                log.info("pairing: user %s on %s revoked", user_id, platform)
                return True
            case ListPairings():
                return attrs.evolve(self.book, pending=self._waiting())
        raise Rejected(TypeError(f"pairing does not take {type(message).__name__}"))

    def _waiting(self) -> tuple[PendingCode, ...]:
        oldest = self.clock() - CODE_LIFETIME
        return tuple(code for code in self.book.pending if code.created_at > oldest)

    async def _request(self, message: RequestCode) -> PendingCode:
        waiting = self._waiting()
        for code in waiting:
            if (code.platform, code.user_id) == (message.platform, message.user_id):
                return code
        if sum(1 for code in waiting if code.platform == message.platform) >= MAX_WAITING:
            raise Rejected(TooManyWaiting(f"{MAX_WAITING} pairing codes are already waiting on {message.platform}"))
        code = PendingCode(
            "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH)),
            message.platform, message.user_id, message.user_name, message.chat_id, self.clock(),
        )
        await self._keep(attrs.evolve(self.book, pending=(*waiting, code)))
        log.info("pairing: user %s on %s asked in; code issued (hermes-actors pairing list)", message.user_id, message.platform)
        return code

    async def _approve(self, code: str) -> PairedUser:
        waiting = self._waiting()
        found = next((entry for entry in waiting if entry.code == code), None)
        if found is None:
            raise Rejected(UnknownCode(f"no pairing code {code!r} is waiting (codes expire after an hour)"))
        user = PairedUser(found.platform, found.user_id, found.user_name, found.chat_id, self.clock())
        others = tuple(u for u in self.book.paired if (u.platform, u.user_id) != (user.platform, user.user_id))
        await self._keep(PairingBook(tuple(entry for entry in waiting if entry is not found), (*others, user)))
        log.info("pairing: user %s on %s approved", user.user_id, user.platform)
        return user

    async def _keep(self, book: PairingBook) -> None:
        await trio.to_thread.run_sync(_save, self.file, book)
        self.book = book
