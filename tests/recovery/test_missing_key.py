"""A provider that needs a key and has none is refused before any request, naming the variable."""

from __future__ import annotations

from pathlib import Path

import pytest

from providers.recovery import ProviderTarget, load_provider_keys
from providers.recovery.keys import MissingProviderKey

from .test_keys import config_from


def target(provider: str, base_url: str | None = None) -> ProviderTarget:
    return ProviderTarget.resolve(provider, "some-model", base_url)


class TestRequire:
    """ProviderKeys.require refuses only a keyed provider's own endpoint without a key."""

    @pytest.mark.parametrize(
        ("provider", "variable"),
        [("openrouter", "OPENROUTER_API_KEY"), ("openai", "OPENAI_API_KEY"), ("anthropic", "ANTHROPIC_API_KEY")],
    )
    def test_missing(self, tmp_path: Path, provider: str, variable: str) -> None:
        keys = load_provider_keys(config_from(tmp_path, ""), {})
        with pytest.raises(MissingProviderKey) as info:
            keys.require(target(provider))
        assert str(info.value) == f"no API key: set {variable} (in the environment or HERMES_ACTORS_HOME/.env)"

    def test_the_providers_own_url_is_held_to_it(self, tmp_path: Path) -> None:
        keys = load_provider_keys(config_from(tmp_path, ""), {})
        with pytest.raises(MissingProviderKey):
            keys.require(target("openrouter", "https://openrouter.ai/api/v1"))

    def test_api_key_env_is_named(self, tmp_path: Path) -> None:
        keys = load_provider_keys(config_from(tmp_path, "model:\n  provider: openai\n  api_key_env: WORK_OPENAI\n"), {})
        with pytest.raises(MissingProviderKey, match="set WORK_OPENAI "):
            keys.require(target("openai"))

    @pytest.mark.parametrize(
        ("provider", "base_url"),
        [("custom", None), ("openai", "http://127.0.0.1:8080/v1"), ("codex", None), ("openrouter", "http://proxy.local/v1")],
    )
    def test_no_key_needed(self, tmp_path: Path, provider: str, base_url: str | None) -> None:
        load_provider_keys(config_from(tmp_path, ""), {}).require(target(provider, base_url))

    def test_a_key_or_a_pool_satisfies_it(self, tmp_path: Path) -> None:
        config = config_from(tmp_path, "credential_pool:\n  extra_keys: {openrouter: [OR_2]}\n")
        load_provider_keys(config, {"OPENROUTER_API_KEY": "a"}).require(target("openrouter"))
        load_provider_keys(config, {"OR_2": "b"}).require(target("openrouter"))
        load_provider_keys(config, {"OPENROUTER_API_KEY": "a", "OR_2": "b"}).require(target("openrouter"))
