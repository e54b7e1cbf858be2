"""The messaging gateway's core, shared by every platform adapter: who may talk (allowlists and DM
pairing), a session per conversation, the commands that act at once, approvals and questions as
buttons, replies with their files, and files received. An adapter supplies the platform's side
(:class:`ChatPort`) and feeds the desk its updates."""

from actors.platform.gateway.desk import REFUSAL, GatewayDesk, session_id_for
from actors.platform.gateway.follower import ChatFollower
from actors.platform.gateway.pairing import PAIRING, PairingActor
from actors.platform.gateway.port import (
    ButtonPress,
    ChatPort,
    ChatRef,
    Choice,
    Incoming,
    RemoteFile,
    SentMessage,
)

__all__ = [
    "PAIRING",
    "REFUSAL",
    "ButtonPress",
    "ChatFollower",
    "ChatPort",
    "ChatRef",
    "Choice",
    "GatewayDesk",
    "Incoming",
    "PairingActor",
    "RemoteFile",
    "SentMessage",
    "session_id_for",
]
