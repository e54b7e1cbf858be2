"""The ``hermes-actors pairing`` requests: each becomes a message to the ``pairing`` actor."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from actors import ActorError, ActorNotFound
from supervisor import ActorSystem
from control.errors import RequestFailed
from actors.platform.gateway.pairing import (
    PAIRING,
    ApproveCode,
    ListPairings,
    PairedUser,
    RevokeUser,
)
from actors.platform.outbound import (
    DeliveryFailed,
    Destination,
    OutboundRegistry,
    PlatformNotConnected,
    UnknownDestination,
)
from messages import control as c

__all__ = ["pairing_request"]

log = logging.getLogger("hermes_actors.platform.pairing")

WELCOME = "You're in: the owner approved your pairing code. Write to me any time."


async def pairing_request(system: ActorSystem, outbound: OutboundRegistry | None, request: c.PairingRequest) -> c.PairingReply:
    """Serve one ``pairing`` verb; an approved user is told so in their chat when the platform is up.

    Raises:
        RequestFailed: ``invalid`` (a verb without its argument), ``not_found`` (no such code or
            user), ``unavailable`` (no pairing actor).
    """
    try:
        actor = system.lookup(PAIRING)
    except ActorNotFound as exc:
        raise RequestFailed("unavailable", "this daemon keeps no pairing book") from exc
    try:
        message = ""
        if request.action == "approve":
            if not request.code:
                raise RequestFailed("invalid", "pairing approve needs a CODE")
            user = await actor.ask(ApproveCode(request.code))
            message = f"approved {user.user_name} ({user.platform} user {user.user_id})"
            if outbound is not None:
                await _welcome(outbound, user)
        elif request.action == "revoke":
            if not request.platform or not request.user_id:
                raise RequestFailed("invalid", "pairing revoke needs PLATFORM and USER_ID")
            if not await actor.ask(RevokeUser(request.platform, request.user_id)):
                raise RequestFailed("not_found", f"no paired {request.platform} user {request.user_id}")
            message = f"revoked {request.platform} user {request.user_id}"
        elif request.action != "list":
            raise RequestFailed("invalid", f"unknown pairing action {request.action!r}")
        book = await actor.ask(ListPairings())
    except LookupError as exc:
        raise RequestFailed("not_found", str(exc)) from exc
    except ActorError as exc:
        raise RequestFailed("unavailable", f"the pairing actor is not available: {exc}") from exc
    return c.PairingReply(
        request.request_id,
        [c.PairingCodeView(p.code, p.platform, p.user_id, p.user_name, _iso(p.created_at)) for p in book.pending],
        [c.PairedUserView(u.platform, u.user_id, u.user_name, _iso(u.approved_at)) for u in book.paired],
        message,
    )


async def _welcome(outbound: OutboundRegistry, user: PairedUser) -> None:
    try:
        await outbound.deliver(Destination(user.platform, user.chat_id), WELCOME)
    except (DeliveryFailed, PlatformNotConnected, UnknownDestination) as exc:
        log.info("pairing: the approved user was not told (%s)", exc)


def _iso(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).isoformat()
