"""The peer link's handshake: a daemon proves it knows the cluster's shared secret before anything else.

The listener sends a random nonce; the connecting daemon answers with its HMAC-SHA256 under the secret
(``HERMES_ACTORS_CLUSTER_SECRET``). A wrong or late answer closes the connection. Exactly the two
lines are read, so what follows on the stream is the control protocol's.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping

import trio

__all__ = ["HANDSHAKE_SECONDS", "PEER_SECRET_ENV", "PeerAuthFailed", "challenge", "peer_secret", "prove"]

PEER_SECRET_ENV = "HERMES_ACTORS_CLUSTER_SECRET"
MIN_SECRET_CHARS = 32
# Seconds a peer has to prove itself, and a forwarder to reach a peer.
HANDSHAKE_SECONDS = 5.0
_NONCE_BYTES = 32
# A nonce (token_hex of 32 bytes) and a proof (a SHA-256 hexdigest) are both 64 characters.
_LINE_BYTES = 2 * _NONCE_BYTES + 1
_CONTEXT = b"hermes-actors peer link v1:"


class PeerAuthFailed(Exception):
    """The other side of a peer link did not prove it knows the shared secret."""


def peer_secret(environ: Mapping[str, str]) -> bytes:
    """The shared secret of the peer link, from the environment (or ``.env``).

    Raises:
        ValueError: it is unset or shorter than 32 characters (a daemon must not listen without it).
    """
    secret = environ.get(PEER_SECRET_ENV, "")
    if len(secret) < MIN_SECRET_CHARS:
        raise ValueError(
            f"daemon.cluster_listen needs {PEER_SECRET_ENV} (at least {MIN_SECRET_CHARS} characters, the same on "
            "every daemon) in the environment or .env"
        )
    return secret.encode()


def _proof(secret: bytes, nonce: bytes) -> bytes:
    return hmac.new(secret, _CONTEXT + nonce, hashlib.sha256).hexdigest().encode()


async def _read_line(stream: trio.abc.ReceiveStream) -> bytes:
    """One handshake line (a nonce or a proof: always 64 hex digits and a newline), without its
    newline. Exactly that much is read: what follows is the control protocol's."""
    data = b""
    while len(data) < _LINE_BYTES:
        chunk = await stream.receive_some(_LINE_BYTES - len(data))
        if not chunk:
            raise PeerAuthFailed("the connection closed during the handshake")
        data += chunk
    if not data.endswith(b"\n"):
        raise PeerAuthFailed("a malformed handshake line")
    return data[:-1]


async def challenge(stream: trio.SocketStream, secret: bytes) -> None:
    """The listener's side: send a nonce, check the peer's proof.

    Raises:
        PeerAuthFailed: a wrong proof, or none within the handshake's time.
    """
    nonce = secrets.token_hex(_NONCE_BYTES).encode()
    with trio.move_on_after(HANDSHAKE_SECONDS) as waited:
        await stream.send_all(nonce + b"\n")
        answer = await _read_line(stream)
    if waited.cancelled_caught:
        raise PeerAuthFailed(f"no proof within {HANDSHAKE_SECONDS:g} s")
    if not hmac.compare_digest(answer, _proof(secret, nonce)):
        raise PeerAuthFailed("a wrong proof of the shared secret")


async def prove(stream: trio.SocketStream, secret: bytes) -> None:
    """The connecting side: answer the listener's nonce."""
    nonce = await _read_line(stream)
    await stream.send_all(_proof(secret, nonce) + b"\n")
