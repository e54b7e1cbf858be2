"""SDK clients shared by every session, one per (provider, base URL, key).

Per-session clients that were never closed once grew a Hermes gateway to tens
of GB; here the pool owns every client and ``aclose()`` releases them all when
the daemon stops. Clients are built with ``max_retries=0`` (the recovery layer
retries) and an ``httpx2.Timeout`` from the ``streaming`` configuration.
"""

from __future__ import annotations

import enum
import hashlib
import ssl
from collections import deque
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import attrs
import httpx2
import trio

from config.providers import StreamingConfig

from ._shards import ShardedTransport
from ._telemetry import TELEMETRY_HEADERS
from ._stale import StaleGuardTransport
from ._urls import PooledHttpClient, pooled_openai
from .anthropic_messages import AnthropicMessagesAdapter
from .base import CLOSE_GRACE_SECONDS, ProviderAdapter
from .chat_completions import ChatCompletionsAdapter
from .codex_responses import CodexResponsesAdapter
from .errors import ClientPoolClosed, ProviderConfigError
from .stream_close import StreamCloser
from .metadata import ModelMetadata, builtin_limits
from .types import ProviderSettings

if TYPE_CHECKING:
    import anthropic
    import openai

# Replaced clients are kept (other sessions may still be streaming on them)
# and closed once this many newer ones were retired, or at ``aclose``.
MAX_RETIRED_CLIENTS = 4

# The OpenAI SDK insists on a key; local servers do not need one.
_NO_KEY = "no-key-required"

APP_NAME = "hermes-actors"
APP_URL = "https://github.com/hermes-actors/hermes-actors"


def provider_headers(base_url: str | None) -> dict[str, str]:
    """Headers some providers want on every request, chosen by host.

    OpenRouter attributes traffic by ``HTTP-Referer``/``X-Title``; the ChatGPT
    Codex backend turns away clients that do not present themselves as the
    Codex CLI.
    """
    host = (urlsplit(base_url).hostname or "").lower() if base_url else ""
    if host == "openrouter.ai" or host.endswith(".openrouter.ai"):
        return {"HTTP-Referer": APP_URL, "X-Title": APP_NAME}
    if host == "chatgpt.com" or host.endswith(".chatgpt.com"):
        return {"originator": "codex_cli_rs", "User-Agent": f"codex_cli_rs ({APP_NAME})"}
    return {}


class PoolState(enum.Enum):
    """Lifecycle of a :class:`ClientPool`."""

    OPEN = "open"  # hands out clients
    CLOSED = "closed"  # every client closed; never reopened


@attrs.frozen
class ClientKey:
    """Identity of one shared client. The key itself is kept only as a digest."""

    kind: str
    provider: str
    base_url: str | None
    key_digest: str


@attrs.frozen
class PoolStatistics:
    """Snapshot of a pool for inspection."""

    state: str
    clients: int
    retired: int
    rebuilds: int


def _digest(api_key: str | None) -> str:
    return hashlib.sha256((api_key or "").encode()).hexdigest()[:16]


def _anthropic_base(base_url: str | None) -> str | None:
    # The Anthropic SDK adds /v1 itself; accept URLs written either way.
    if base_url is None:
        return None
    return base_url.rstrip("/").removesuffix("/v1")


class ClientPool:
    """Owner of every SDK client of the daemon (and of their HTTP connections).

    Args:
        streaming: timeouts for every client.
        ssl_context: the TLS context all clients share. Building one reads the
            system CA bundle (tens of ms of blocking I/O), so it is made once:
            pass one, or use :meth:`create`, which builds it in a worker thread.
    """

    def __init__(self, streaming: StreamingConfig | None = None, ssl_context: ssl.SSLContext | None = None) -> None:
        self._streaming = streaming or StreamingConfig()
        self._ssl_context = ssl_context
        self._clients: dict[ClientKey, Any] = {}
        self._retired: deque[Any] = deque()
        self._rebuilds = 0
        self._state = PoolState.OPEN
        self.closer = StreamCloser()

    @classmethod
    async def create(cls, streaming: StreamingConfig | None = None) -> ClientPool:
        """A pool whose TLS context was built off the Trio loop."""
        context = await trio.to_thread.run_sync(httpx2.create_ssl_context)
        return cls(streaming, context)

    def key_for(self, settings: ProviderSettings) -> ClientKey:
        """The pool key of the client ``settings`` use."""
        kind = "anthropic" if settings.api_mode == "anthropic_messages" else "openai"
        return ClientKey(kind, settings.provider, settings.base_url, _digest(settings.api_key))

    def get_openai(self, settings: ProviderSettings) -> openai.AsyncOpenAI:
        """The shared OpenAI client for these settings (Chat Completions and Responses)."""
        key = self.key_for(settings)
        if key.kind != "openai":
            raise ProviderConfigError(f"{settings.api_mode} does not use the OpenAI client")
        return self._get(key, settings)

    def get_anthropic(self, settings: ProviderSettings) -> anthropic.AsyncAnthropic:
        """The shared Anthropic client for these settings."""
        key = self.key_for(settings)
        if key.kind != "anthropic":
            raise ProviderConfigError(f"{settings.api_mode} does not use the Anthropic client")
        return self._get(key, settings)

    async def rebuild(self, settings: ProviderSettings) -> None:
        """Replace the client of ``settings`` by a fresh one (new connection pool).

        Used by the recovery layer after a transient transport failure. The old
        client is retired, not closed at once, so streams of other sessions on
        it can finish; the oldest retired clients beyond
        :data:`MAX_RETIRED_CLIENTS` are closed.
        """
        self._check_open()
        key = self.key_for(settings)
        old = self._clients.pop(key, None)
        if old is not None:
            self._retired.append(old)
        self._clients[key] = self._build(key, settings)
        self._rebuilds += 1
        while len(self._retired) > MAX_RETIRED_CLIENTS:
            await _close(self._retired.popleft())

    async def aclose(self) -> None:
        """Close every client, shielded so a cancelled shutdown still releases sockets."""
        if self._state is PoolState.CLOSED:
            return
        self._state = PoolState.CLOSED
        clients = [*self._clients.values(), *self._retired]
        self._clients.clear()
        self._retired.clear()
        with trio.CancelScope(shield=True):
            # Complete streams still finishing in the background go back first (each is bounded).
            with trio.move_on_after(CLOSE_GRACE_SECONDS):
                await self.closer.wait_idle()
            for client in clients:
                await _close(client)

    def statistics(self) -> PoolStatistics:
        """Current counts, for the inspection commands."""
        return PoolStatistics(
            state=self._state.value, clients=len(self._clients), retired=len(self._retired), rebuilds=self._rebuilds
        )

    def _get(self, key: ClientKey, settings: ProviderSettings) -> Any:
        self._check_open()
        client = self._clients.get(key)
        if client is None:
            client = self._clients[key] = self._build(key, settings)
        return client

    def _check_open(self) -> None:
        if self._state is PoolState.CLOSED:
            raise ClientPoolClosed("the provider client pool is closed")

    def _build(self, key: ClientKey, settings: ProviderSettings) -> Any:
        s = self._streaming
        timeout = httpx2.Timeout(
            connect=s.connect_timeout_seconds,
            read=s.read_timeout_seconds,
            write=s.read_timeout_seconds,
            pool=s.connect_timeout_seconds,
        )
        if self._ssl_context is None:
            self._ssl_context = httpx2.create_ssl_context()
        limits = httpx2.Limits(max_connections=s.max_connections, max_keepalive_connections=s.max_keepalive_connections)
        context = self._ssl_context
        transport = StaleGuardTransport(
            ShardedTransport(lambda shard: httpx2.AsyncHTTPTransport(verify=context, limits=shard), limits)
        )
        http = PooledHttpClient(timeout=timeout, follow_redirects=True, transport=transport)
        if key.kind == "anthropic":
            import anthropic  # loaded by now (AnthropicMessagesAdapter awaits it in a thread): a lookup

            return anthropic.AsyncAnthropic(
                api_key=settings.api_key or _NO_KEY,
                base_url=_anthropic_base(settings.base_url),
                max_retries=0,
                timeout=timeout,
                http_client=http,
                # The SDK drops a default header given as Omit(), though its annotation says str only.
                default_headers={**provider_headers(settings.base_url), **dict.fromkeys(TELEMETRY_HEADERS, anthropic.Omit())},  # type: ignore[arg-type]
            )
        import openai  # loaded by now (the adapters await it in a thread): a lookup

        return pooled_openai(openai)(
            api_key=settings.api_key or _NO_KEY,
            base_url=settings.base_url,
            max_retries=0,
            timeout=timeout,
            http_client=http,
            # The SDK drops a default header given as Omit(), though its annotation says str only.
            default_headers={**provider_headers(settings.base_url), **dict.fromkeys(TELEMETRY_HEADERS, openai.Omit())},  # type: ignore[arg-type]
        )


async def _close(client: Any) -> None:
    with trio.move_on_after(CLOSE_GRACE_SECONDS, shield=True):
        await client.close()


def make_adapter(
    settings: ProviderSettings,
    pool: ClientPool,
    config: StreamingConfig,
    metadata: ModelMetadata | None = None,
) -> ProviderAdapter:
    """The adapter for ``settings.api_mode``, drawing its client from ``pool``.

    The client is looked up at every call, so a ``pool.rebuild`` takes effect
    on the next request. ``metadata`` supplies Anthropic's output caps (the
    built-in table when omitted).
    """
    stale = config.stale_timeout_seconds
    if settings.api_mode == "anthropic_messages":
        caps = metadata.max_output_tokens if metadata is not None else (lambda model: builtin_limits(model).max_output_tokens)
        return AnthropicMessagesAdapter(
            lambda: pool.get_anthropic(settings), stale_timeout=stale, output_cap=caps, closer=pool.closer
        )
    if settings.api_mode == "codex_responses":
        return CodexResponsesAdapter(lambda: pool.get_openai(settings), stale_timeout=stale, closer=pool.closer)
    return ChatCompletionsAdapter(lambda: pool.get_openai(settings), stale_timeout=stale, closer=pool.closer)
