"""Provider keys from config.yaml and the environment: pools, ``api_key_env`` and the default key."""

from __future__ import annotations

from pathlib import Path


from messages.chat import HumanMessage
from config.loader import Config, load_config
from config.recovery import RetryConfig
from providers.clients import ClientPool
from providers.recovery import (
    FallbackChain,
    PooledConnector,
    ProviderTarget,
    load_provider_keys,
    stream_with_recovery,
)
from providers.scripted import ScriptedProvider
from providers.types import ChatRequest

from .conftest import STREAMING

FAST_RETRY = RetryConfig(max_retries=1, base_delay=0.01, max_delay=0.02, jitter_ratio=0.0)


def config_from(tmp_path: Path, text: str) -> Config:
    """The configuration of a ``config.yaml`` holding ``text``, read by the real loader."""
    (tmp_path / "config.yaml").write_text(text, encoding="utf-8")
    return load_config(tmp_path)


def target(provider: str, api_mode: str = "chat_completions", base_url: str | None = None) -> ProviderTarget:
    return ProviderTarget(provider, "some-model", base_url, api_mode)


class TestPools:
    """A provider with several keys gets one pool holding them in priority order; one key gets none."""

    def test_extra_keys_join_the_usual_variable(self, tmp_path: Path) -> None:
        config = config_from(tmp_path, "credential_pool:\n  strategy: round_robin\n  extra_keys: {openai: [OPENAI_API_KEY_2, OPENAI_API_KEY_3]}\n")
        keys = load_provider_keys(config, {"OPENAI_API_KEY": "k1", "OPENAI_API_KEY_2": "k2", "OPENAI_API_KEY_3": "k3"})
        pool = keys.pools["openai"]
        assert ["k1", "k2", "k3"] == [c.key for c in pool.credentials]
        assert "round_robin" == pool.strategy

    def test_any_variable_name_is_read(self, tmp_path: Path) -> None:
        config = config_from(tmp_path, "credential_pool:\n  extra_keys: {anthropic: [SECOND_CLAUDE]}\n")
        keys = load_provider_keys(config, {"ANTHROPIC_API_KEY": "a1", "SECOND_CLAUDE": "a2"})
        assert ["a1", "a2"] == [c.key for c in keys.pools["anthropic"].credentials]

    def test_single_key_has_no_pool(self, tmp_path: Path) -> None:
        config = config_from(tmp_path, "credential_pool:\n  extra_keys: {openai: [OPENAI_API_KEY_2]}\n")
        keys = load_provider_keys(config, {"OPENAI_API_KEY": "k1", "OPENAI_API_KEY_2": "k1", "ANTHROPIC_API_KEY": "a1"})
        assert {} == dict(keys.pools)
        assert "k1" == keys.key_for(target("openai"))

    def test_one_extra_key_serves_when_the_usual_variable_is_unset(self, tmp_path: Path) -> None:
        config = config_from(tmp_path, "credential_pool:\n  extra_keys: {openai: [OPENAI_API_KEY_2]}\n")
        keys = load_provider_keys(config, {"OPENAI_API_KEY_2": "k2"})
        assert ({}, "k2") == (dict(keys.pools), keys.key_for(target("openai")))

    def test_provider_without_a_usual_variable_pools_its_extras(self, tmp_path: Path) -> None:
        config = config_from(
            tmp_path,
            "fallback_providers:\n  - {provider: codex, model: gpt-5-codex}\ncredential_pool:\n  extra_keys: {codex: [CODEX_A, CODEX_B]}\n",
        )
        keys = load_provider_keys(config, {"CODEX_A": "n1", "CODEX_B": "n2"})
        assert ["n1", "n2"] == [c.key for c in keys.pools["codex"].credentials]
        assert keys.key_for(target("codex")) is None

    async def test_built_pool_rotates_away_from_an_exhausted_key(self, tmp_path: Path) -> None:
        config = config_from(tmp_path, "credential_pool:\n  extra_keys: {openrouter: [OPENROUTER_API_KEY_2]}\n")
        pool = load_provider_keys(config, {"OPENROUTER_API_KEY": "r1", "OPENROUTER_API_KEY_2": "r2"}, clock=lambda: 1000.0).pools["openrouter"]
        first = await pool.select()
        await pool.mark_exhausted(first, status_code=429)
        assert ("r1", "r2") == (first.key, (await pool.select()).key)

    def test_keys_stay_out_of_repr(self, tmp_path: Path) -> None:
        keys = load_provider_keys(Config(), {"OPENAI_API_KEY": "sk-secret-1", "OPENAI_API_KEY_2": "sk-secret-2"})
        assert "sk-secret" not in repr(keys)


class TestApiKeyEnv:
    """``model.api_key_env`` replaces the model's provider's usual variable, and only that provider's."""

    def test_default_key_of_the_models_provider(self, tmp_path: Path) -> None:
        config = config_from(tmp_path, "model:\n  provider: openrouter\n  api_key_env: TEAM_ROUTER_KEY\n")
        keys = load_provider_keys(config, {"TEAM_ROUTER_KEY": "team", "OPENROUTER_API_KEY": "usual", "OPENAI_API_KEY": "oa"})
        assert "team" == keys.key_for(target("openrouter"))
        assert "oa" == keys.key_for(target("openai"))

    def test_unset_provider_means_openai(self, tmp_path: Path) -> None:
        config = config_from(tmp_path, "model:\n  default: gpt-4.1\n  api_key_env: MY_OPENAI\n")
        assert "mine" == load_provider_keys(config, {"MY_OPENAI": "mine", "OPENAI_API_KEY": "usual"}).key_for(target("openai"))

    def test_pool_starts_with_it(self, tmp_path: Path) -> None:
        config = config_from(
            tmp_path, "model:\n  provider: openai\n  api_key_env: MY_OPENAI\ncredential_pool:\n  extra_keys: {openai: [OPENAI_API_KEY_2]}\n"
        )
        keys = load_provider_keys(config, {"MY_OPENAI": "mine", "OPENAI_API_KEY": "usual", "OPENAI_API_KEY_2": "second"})
        assert ["mine", "second"] == [c.key for c in keys.pools["openai"].credentials]

    def test_wins_over_the_anthropic_endpoint_rule(self, tmp_path: Path) -> None:
        config = config_from(tmp_path, "model:\n  provider: custom\n  api_key_env: PROXY_KEY\n")
        keys = load_provider_keys(config, {"PROXY_KEY": "proxy", "ANTHROPIC_API_KEY": "a1"})
        assert "proxy" == keys.key_for(target("custom", "anthropic_messages"))

    def test_anthropic_endpoint_takes_the_anthropic_key(self) -> None:
        keys = load_provider_keys(Config(), {"OPENAI_API_KEY": "oa", "ANTHROPIC_API_KEY": "a1"})
        assert ("a1", "oa") == (keys.key_for(target("custom", "anthropic_messages")), keys.key_for(target("custom")))

    def test_unset_variable_gives_no_key(self, tmp_path: Path) -> None:
        config = config_from(tmp_path, "model:\n  default: gpt-4.1\n  api_key_env: NOT_SET_ANYWHERE\n")
        assert load_provider_keys(config, {"OPENAI_API_KEY": "usual"}).key_for(target("openai")) is None


def request() -> ChatRequest:
    return ChatRequest(messages=[HumanMessage("hi")], tools=[], model="unset", max_tokens=100)


class TestOverTheWire:
    """The keys reach the provider in the Authorization header, rotating on a rate limit."""

    async def test_rate_limit_rotates_to_the_extra_key(self, tmp_path: Path, server: ScriptedProvider, clients: ClientPool) -> None:
        config = config_from(tmp_path, "credential_pool:\n  extra_keys: {openrouter: [OPENROUTER_API_KEY_2]}\n")
        keys = load_provider_keys(config, {"OPENROUTER_API_KEY": "sk-or-first", "OPENROUTER_API_KEY_2": "sk-or-second"})
        server.push({"error": {"status": 429}}, {"text": "fine"})
        done = await stream_with_recovery(
            request(), chain=FallbackChain(target("openrouter", base_url=server.base_url)),
            connector=PooledConnector(clients, STREAMING, default_key=keys.key_for), pools=keys.pools, retry=FAST_RETRY,
        )
        assert "fine" == done.message.content
        assert ["Bearer sk-or-first", "Bearer sk-or-second"] == [r.headers["authorization"] for r in server.requests]

    async def test_api_key_env_is_sent(self, tmp_path: Path, server: ScriptedProvider, clients: ClientPool) -> None:
        config = config_from(tmp_path, "model:\n  provider: custom\n  api_key_env: PROXY_KEY\n")
        keys = load_provider_keys(config, {"PROXY_KEY": "sk-proxy", "OPENAI_API_KEY": "sk-usual"})
        server.push({"text": "ok"})
        await stream_with_recovery(
            request(), chain=FallbackChain(target("custom", base_url=server.base_url)),
            connector=PooledConnector(clients, STREAMING, default_key=keys.key_for), pools=keys.pools, retry=FAST_RETRY,
        )
        assert ["Bearer sk-proxy"] == [r.headers["authorization"] for r in server.requests]
