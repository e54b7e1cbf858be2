"""Fixtures of the sandbox tests."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import trio

from actors.sandbox.result import SandboxToolCall
from actors.sandbox.server import RpcServer
from tests.jail.fixtures import Jails, jails, launcher
from tests.sandbox.helpers import ToolBench
from tests.sandbox.rpc_client import TOKEN, Client, serve_rpc
from tools.testing import LocalToolContext

__all__ = ["bench", "connect", "jails", "launcher", "served", "short_dir"]


@pytest.fixture
def short_dir() -> Iterator[str]:
    """A private directory with a short path (Unix socket paths are limited); must be empty at the end."""
    path = tempfile.mkdtemp(prefix="hx-t-", dir="/tmp")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def bench(tmp_path, jails: Jails) -> ToolBench:
    """Real registry and context, jailed and in full-access in turn; slow tools take 0.2 s."""
    home = tmp_path / "home"
    return ToolBench(LocalToolContext(home=home, cwd=tmp_path, jail=jails.jail(tmp_path, home=home)))


@pytest.fixture
async def served(short_dir: str, bench: ToolBench) -> AsyncIterator[tuple[str, RpcServer, list[SandboxToolCall]]]:
    """A server with default options, stopped after the test."""
    records: list[SandboxToolCall] = []
    async with trio.open_nursery() as nursery:
        path, server = await serve_rpc(nursery, short_dir, bench, records=records)
        yield path, server, records
        nursery.cancel_scope.cancel()


@pytest.fixture
async def connect() -> AsyncIterator[Any]:
    """Opens clients to a socket path, presenting ``preamble`` (the token line by default);
    all are closed after the test."""
    opened: list[trio.SocketStream] = []

    async def open_client(path: str, preamble: bytes = TOKEN.encode() + b"\n") -> Client:
        stream = await trio.open_unix_socket(path)
        opened.append(stream)
        if preamble:
            await stream.send_all(preamble)
        return Client(stream)

    yield open_client
    for stream in opened:
        await stream.aclose()
