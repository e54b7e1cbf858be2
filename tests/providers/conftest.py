"""Fixtures: a real scripted provider on loopback and a real client pool."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Sequence

import httpx2
import pytest
import trio

from messages.chat import ChatMessage, message_from_dict
from config.providers import StreamingConfig
from providers import (
    ChatRequest,
    ClientPool,
    ProviderSettings,
    ProviderTimeoutError,
    StreamStalled,
    make_adapter,
)
from providers.base import ProviderAdapter
from providers.scripted import ScriptedProvider, serve_scripted_provider
from providers.types import StreamEvent

MODES = ("chat_completions", "anthropic_messages", "codex_responses")


@pytest.fixture
async def server() -> AsyncIterator[ScriptedProvider]:
    """A scripted provider on loopback with an empty script."""
    async with serve_scripted_provider() as srv:
        yield srv


@pytest.fixture(scope="session")
def ssl_context() -> ssl.SSLContext:
    """One TLS context for the whole run: building one reads the CA bundle."""
    return httpx2.create_ssl_context()


@pytest.fixture
async def pool(ssl_context: ssl.SSLContext) -> AsyncIterator[ClientPool]:
    """A real client pool (5 s read timeout), closed after the test."""
    pool = ClientPool(StreamingConfig(read_timeout_seconds=5, connect_timeout_seconds=2), ssl_context)
    try:
        yield pool
    finally:
        await pool.aclose()


@pytest.fixture
async def short_read_pool(ssl_context: ssl.SSLContext) -> AsyncIterator[ClientPool]:
    """A pool whose clients time out a socket read after 0.25 s."""
    pool = ClientPool(StreamingConfig(read_timeout_seconds=0.25), ssl_context)
    try:
        yield pool
    finally:
        await pool.aclose()


async def expect_read_timeout(adapter: ProviderAdapter) -> None:
    """The call fails with a read timeout, not a stale-stream report."""
    with trio.fail_after(5):
        with pytest.raises(ProviderTimeoutError) as info:
            await collect(adapter, request())
    assert not isinstance(info.value, StreamStalled)


def settings_for(server: ScriptedProvider, mode: str, key: str = "sk-test-key") -> ProviderSettings:
    """Settings pointing one api_mode at the scripted server."""
    return ProviderSettings(provider="scripted", model="scripted-model", base_url=server.base_url, api_mode=mode, api_key=key)


def adapter_for(
    server: ScriptedProvider, pool: ClientPool, mode: str, *, stale: float = 30.0, **kw: object
) -> ProviderAdapter:
    """A real adapter of ``mode`` talking to ``server``."""
    return make_adapter(settings_for(server, mode), pool, StreamingConfig(stale_timeout_seconds=stale), **kw)


def request(messages: Sequence[dict | ChatMessage] | None = None, tools: list[dict] | None = None, **kw: object) -> ChatRequest:
    """A small request; by default one user message and no tools (messages given in their dict form are typed)."""
    given = messages or [{"role": "user", "content": "hi"}]
    return ChatRequest(
        messages=[message_from_dict(m) if isinstance(m, dict) else m for m in given], tools=tools or [], model=kw.pop("model", "scripted-model"), **kw
    )


async def collect(adapter: ProviderAdapter, req: ChatRequest) -> list[StreamEvent]:
    """Every event of one call."""
    async with adapter.stream(req) as events:
        return [event async for event in events]


TERMINAL_TOOL = {
    "type": "function",
    "function": {
        "name": "terminal",
        "description": "Run a shell command",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    },
}
