"""A real private key, as ``openssl`` writes it, and a check that no piece of its body shows in a text."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

__all__ = ["key_body", "leaked", "pem"]

#: The length of a run of a key's body that counts as a leak.
PIECE = 16


@pytest.fixture(scope="session")
def pem() -> str:
    """A real RSA private key in PEM, as openssl writes it (one per test run)."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    key = subprocess.run(
        ["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout.strip()
    assert key.startswith("-----BEGIN PRIVATE KEY-----")
    return key


def key_body(pem: str) -> list[str]:
    """The key's base64 lines (between BEGIN and END)."""
    return pem.splitlines()[1:-1]


def leaked(pem: str, rendered: str) -> list[str]:
    """Every run of 16 characters of a line of the key's body found in ``rendered`` (as it is, or JSON-escaped)."""
    pieces = {line[at : at + PIECE] for line in key_body(pem) for at in range(len(line) - PIECE + 1)}
    return sorted(piece for piece in pieces if piece in rendered or json.dumps(piece)[1:-1] in rendered)
