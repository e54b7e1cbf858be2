"""The shared client pool and the adapter factory."""

from __future__ import annotations

import httpx2
import httpx2._urls as httpx2_urls
import pytest
import trio

from messages.chat import message_to_dict
from config.providers import StreamingConfig
from providers import ClientPool, ClientPoolClosed, ProviderConfigError, ProviderSettings, make_adapter
from providers.anthropic_messages import AnthropicMessagesAdapter
from providers.chat_completions import ChatCompletionsAdapter
from providers.clients import provider_headers
from providers.codex_responses import CodexResponsesAdapter
from providers._urls import MERGED_URLS_KEPT, MergedUrls

from .conftest import MODES, adapter_for, collect, request, settings_for


def _settings(mode: str = "chat_completions", key: str = "sk-a", url: str = "http://127.0.0.1:9/v1") -> ProviderSettings:
    return ProviderSettings(provider="p", model="m", base_url=url, api_mode=mode, api_key=key)


class TestSharing:
    """One client per (provider, base URL, key), shared by every caller."""

    async def test_same_settings_same_client(self, pool):
        assert pool.get_openai(_settings()) is pool.get_openai(_settings())
        # Chat Completions and Responses share the OpenAI client.
        assert pool.get_openai(_settings("codex_responses")) is pool.get_openai(_settings())

    async def test_key_or_url_changes_client(self, pool):
        base = pool.get_openai(_settings())
        assert pool.get_openai(_settings(key="sk-b")) is not base
        assert pool.get_openai(_settings(url="http://127.0.0.1:10/v1")) is not base
        assert pool.statistics().clients == 3

    async def test_sdk_clients_configured(self, pool):
        client = pool.get_openai(_settings())
        assert client.max_retries == 0
        anth = pool.get_anthropic(_settings("anthropic_messages", url="http://127.0.0.1:9/v1"))
        assert anth.max_retries == 0
        assert str(anth.base_url).rstrip("/") == "http://127.0.0.1:9"

    async def test_key_not_in_pool_key(self, pool):
        key = pool.key_for(_settings(key="sk-very-secret"))
        assert "sk-very-secret" not in repr(key)
        assert "sk-very-secret" not in repr(_settings(key="sk-very-secret"))

    async def test_wrong_kind_refused(self, pool):
        with pytest.raises(ProviderConfigError):
            pool.get_anthropic(_settings("chat_completions"))
        with pytest.raises(ProviderConfigError):
            pool.get_openai(_settings("anthropic_messages"))


class TestProviderHeaders:
    """Provider-specific headers are chosen by host, never by substring."""

    @pytest.mark.parametrize(
        ("url", "header", "value"),
        [
            ("https://openrouter.ai/api/v1", "X-Title", "hermes-actors"),
            ("https://chatgpt.com/backend-api/codex", "originator", "codex_cli_rs"),
        ],
    )
    def test_known_hosts(self, url, header, value):
        assert provider_headers(url)[header] == value

    @pytest.mark.parametrize("url", [None, "https://api.openai.com/v1", "https://openrouter.ai.evil.example/v1"])
    def test_others_get_none(self, url):
        assert provider_headers(url) == {}

    async def test_headers_reach_the_client(self, pool):
        client = pool.get_openai(_settings(url="https://openrouter.ai/api/v1"))
        assert client.default_headers["X-Title"] == "hermes-actors"

    @pytest.mark.parametrize("mode", MODES)
    async def test_no_sdk_telemetry_on_the_wire(self, server, pool, mode):
        """The SDKs' x-stainless-* headers are left off; what providers need is sent."""
        server.push({"text": "ok"})
        await collect(adapter_for(server, pool, mode), request())
        sent = server.requests[-1].headers
        assert not [name for name in sent if name.startswith("x-stainless")]
        assert {"authorization", "content-type", "user-agent"} <= set(sent) or "x-api-key" in sent


class TestLifecycle:
    """rebuild replaces a client; aclose closes all and the pool is not reopened."""

    async def test_rebuild_replaces_and_next_call_uses_new(self, server, pool):
        settings = settings_for(server, "chat_completions")
        adapter = make_adapter(settings, pool, StreamingConfig())
        old = pool.get_openai(settings)
        await pool.rebuild(settings)
        assert pool.get_openai(settings) is not old
        assert pool.statistics().rebuilds == 1 and pool.statistics().retired == 1
        server.push({"text": "after rebuild"})
        assert message_to_dict((await collect(adapter, request()))[-1].message)["content"] == "after rebuild"

    async def test_retired_clients_bounded(self, pool):
        for _ in range(7):
            await pool.rebuild(_settings())
        assert pool.statistics().retired == 4

    async def test_aclose(self, ssl_context):
        pool = ClientPool(ssl_context=ssl_context)
        client = pool.get_openai(_settings())
        await pool.aclose()
        assert client._client.is_closed
        assert pool.statistics().state == "closed"
        with pytest.raises(ClientPoolClosed):
            pool.get_openai(_settings())
        await pool.aclose()  # idempotent

    async def test_aclose_under_cancellation_still_closes(self, ssl_context):
        pool = ClientPool(ssl_context=ssl_context)
        client = pool.get_anthropic(_settings("anthropic_messages"))
        with trio.CancelScope() as scope:
            scope.cancel()
            await pool.aclose()
        assert client._client.is_closed

    async def test_create_builds_tls_context_in_thread(self):
        pool = await ClientPool.create(StreamingConfig())
        try:
            assert pool.get_openai(_settings()) is not None
        finally:
            await pool.aclose()


class TestFactory:
    """make_adapter picks the adapter class from api_mode."""

    @pytest.mark.parametrize(
        ("mode", "cls"),
        [
            ("chat_completions", ChatCompletionsAdapter),
            ("anthropic_messages", AnthropicMessagesAdapter),
            ("codex_responses", CodexResponsesAdapter),
        ],
    )
    async def test_mode(self, pool, mode, cls):
        adapter = make_adapter(_settings(mode), pool, StreamingConfig())
        assert isinstance(adapter, cls)
        assert adapter.api_mode == mode

    def test_bad_mode_rejected(self):
        with pytest.raises(ValueError):
            _settings("bedrock_converse")


class TestMergedUrls:
    """A request path's URL is merged once per client and base URL; requests still go where it says."""

    async def test_a_second_call_parses_its_url_at_most_once(self, server, pool, monkeypatch):
        adapter = adapter_for(server, pool, "chat_completions")
        server.push({"text": "one"})
        await collect(adapter, request())
        parsed: list[str] = []
        parse = httpx2_urls.urlparse
        monkeypatch.setattr(httpx2_urls, "urlparse", lambda url="", **kw: parsed.append(url) or parse(url, **kw))
        server.push({"text": "two"})
        await collect(adapter, request())
        assert server.requests[-1].path == server.requests[0].path == "/v1/chat/completions"
        # What is left is httpx2's own: the request merges its (empty) query parameters into a copy.
        assert len(parsed) <= 1

    def test_a_new_base_url_merges_anew(self):
        merged = MergedUrls()
        first, second = httpx2.URL("http://a/v1/"), httpx2.URL("http://b/v1/")
        join = lambda base: lambda path: base.copy_with(raw_path=base.raw_path + path.encode())  # noqa: E731
        assert str(merged.get(first, "x", join(first))) == "http://a/v1/x"
        assert str(merged.get(first, "x", join(second))) == "http://a/v1/x"
        assert str(merged.get(second, "x", join(second))) == "http://b/v1/x"

    def test_paths_beyond_the_bound_are_not_kept(self):
        merged, calls = MergedUrls(), []
        base = httpx2.URL("http://a/")
        for index in range(MERGED_URLS_KEPT + 5):
            merged.get(base, f"p{index}", lambda path: calls.append(path) or httpx2.URL(f"http://a/{path}"))
        merged.get(base, f"p{MERGED_URLS_KEPT + 1}", lambda path: calls.append(path) or httpx2.URL(f"http://a/{path}"))
        assert len(calls) == MERGED_URLS_KEPT + 6
