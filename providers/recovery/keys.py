"""Which API keys each provider uses, read once from the configuration and the environment.

The one place that turns a provider's usual variable (``OPENAI_API_KEY`` ...),
``model.api_key_env`` and ``credential_pool.extra_keys`` into keys:

- ``model.api_key_env`` replaces the usual variable of the model's provider
  (``model.provider``, or as ``ModelConfig.provider_for`` infers it).
- A provider with two or more keys gets a :class:`CredentialPool` that rotates
  them (``credential_pool.strategy``); its first key is its primary variable's.
- A plugin's provider (``config.plugin_providers``) uses the variable it registered
  (``key_env``); a provider neither built in nor a loaded plugin's is refused.
- A target of a provider without a pool uses the key of :meth:`ProviderKeys.key_for`,
  the same primary variable (``ANTHROPIC_API_KEY`` for any Anthropic Messages
  endpoint, ``custom`` ones included, unless ``api_key_env`` names another).

A single key gets no pool on purpose: a pool of one can never rotate, and the
lookup per request it would add is pure cost on the hot path.

The daemon's composition root uses it once::

    keys = load_provider_keys(config, {**load_env_file(home), **os.environ})
    connector = PooledConnector(clients, config.streaming, metadata, default_key=keys.key_for)
    ... SessionDeps(..., connector=connector, pools=keys.pools)
"""

from __future__ import annotations

import time
from urllib.parse import urlsplit
from collections.abc import Callable, Mapping
from types import MappingProxyType

import attrs

from config.loader import Config
from config.plugin_providers import added_provider, added_providers
from config.providers import KNOWN_PROVIDERS, ModelConfig
from config.recovery import CredentialPoolConfig
from providers.recovery.credentials import CredentialPool
from providers.recovery.fallback import ProviderTarget

__all__ = [
    "KEY_VARIABLES",
    "MissingProviderKey",
    "ProviderKeys",
    "UnavailableProvider",
    "keys_from_env",
    "load_provider_keys",
    "missing_key_message",
    "primary_variable",
]

#: The environment variable holding each provider's key.
KEY_VARIABLES: Mapping[str, str] = MappingProxyType(
    {
        "openai": "OPENAI_API_KEY",
        "anthropic": "ANTHROPIC_API_KEY",
        "openrouter": "OPENROUTER_API_KEY",
        "custom": "OPENAI_API_KEY",
    }
)

_ANTHROPIC_VARIABLE = KEY_VARIABLES["anthropic"]

# The hosts of providers whose own endpoint always wants a key: a request there without one
# can only end in a 401.
_KEYED_HOSTS: Mapping[str, str] = MappingProxyType(
    {"openai": "api.openai.com", "anthropic": "api.anthropic.com", "openrouter": "openrouter.ai"}
)


def _own_endpoint(provider: str, base_url: str | None) -> bool:
    """True when requests go to ``provider``'s own keyed endpoint (no URL: its default one; a plugin's
    provider with a key variable: the URL it registered)."""
    added = added_provider(provider)
    if added is not None:
        return added.key_env is not None and base_url in (None, added.base_url)
    host = _KEYED_HOSTS.get(provider)
    if host is None:
        return False
    if not base_url:
        return True
    name = (urlsplit(base_url).hostname or "").lower()
    return name == host or name.endswith("." + host)


class MissingProviderKey(ValueError):
    """A session would use a provider that needs a key, and none is set; the text says which variable."""


class UnavailableProvider(ValueError):
    """A session would use a provider that is neither built in nor added by a loaded plugin."""


def missing_key_message(variable: str) -> str:
    """What a person is told to do when ``variable`` is unset."""
    return f"no API key: set {variable} (in the environment or HERMES_ACTORS_HOME/.env)"


def primary_variable(provider: str, model: ModelConfig, api_mode: str | None = None) -> str | None:
    """The variable holding ``provider``'s first key (None: it has none).

    ``model.api_key_env`` for the model's own provider when set; else
    ``ANTHROPIC_API_KEY`` for an Anthropic Messages endpoint; else the
    provider's usual variable.
    """
    if model.api_key_env and provider == model.default_provider:
        return model.api_key_env
    added = added_provider(provider)
    if added is not None:
        return added.key_env
    if api_mode == "anthropic_messages":
        return _ANTHROPIC_VARIABLE
    return KEY_VARIABLES.get(provider)


def keys_from_env(provider: str, primary_var: str | None, config: CredentialPoolConfig, env: Mapping[str, str]) -> list[str]:
    """The provider's keys in priority order: its primary variable, then its ``extra_keys``
    variables; unset, empty and repeated keys dropped."""
    keys: list[str] = []
    names = [primary_var] if primary_var else []
    for name in [*names, *config.extra_keys.get(provider, [])]:
        value = env.get(name, "").strip()
        if value and value not in keys:
            keys.append(value)
    return keys


@attrs.frozen
class ProviderKeys:
    """The keys every session of a daemon uses.

    Attributes:
        pools: a credential pool for each provider with several keys, by provider
            name (what ``stream_with_recovery`` takes as ``pools``).
    """

    pools: Mapping[str, CredentialPool]
    _model: ModelConfig
    _env: Mapping[str, str] = attrs.field(repr=False)
    _single: Mapping[str, str] = attrs.field(repr=False)

    def key_for(self, target: ProviderTarget) -> str | None:
        """The key of ``target`` when its provider has no pool (the connector's default key):
        its primary variable's, else the provider's one key from ``extra_keys``."""
        variable = primary_variable(target.provider, self._model, target.api_mode)
        value = self._env.get(variable, "").strip() if variable else ""
        return value or self._single.get(target.provider)

    def require(self, target: ProviderTarget) -> None:
        """Refuse, before any request, a target whose provider needs a key that is nowhere.

        A ``base_url`` of one's own (a local or proxy server) may need no key, so only the
        provider's own endpoint (its default or a URL on its host) is held to it.

        Raises:
            UnavailableProvider: no loaded plugin adds the (not built-in) provider.
            MissingProviderKey: naming the variable to set.
        """
        if target.provider not in KNOWN_PROVIDERS and added_provider(target.provider) is None:
            raise UnavailableProvider(
                f"provider {target.provider!r} is not available: it is not built in and no loaded plugin adds it "
                "(`hermes-actors plugins list` shows which plugins loaded, and why one failed)"
            )
        if not _own_endpoint(target.provider, target.base_url) or target.provider in self.pools:
            return
        if self.key_for(target) is None:
            variable = primary_variable(target.provider, self._model, target.api_mode) or "an API key"
            raise MissingProviderKey(missing_key_message(variable))


def load_provider_keys(config: Config, env: Mapping[str, str], *, clock: Callable[[], float] = time.time) -> ProviderKeys:
    """Every provider's keys from ``config`` and ``env``: the pools and the default key lookup.

    Args:
        config: the loaded configuration (``model``, ``credential_pool``, ``fallback_providers``).
        env: the variables keys are read from (the daemon's environment over
            ``HERMES_ACTORS_HOME/.env``); any name, not only ``*_API_KEY``.
        clock: the pools' clock in epoch seconds (cooldowns).

    The pools keep their state in memory: one daemon shares them between all its sessions.
    """
    section = config.credential_pool
    providers = dict.fromkeys(
        [*KEY_VARIABLES, *(added.name for added in added_providers()), *section.extra_keys, config.model.default_provider, *(f.provider for f in config.fallback_providers)]
    )
    pools: dict[str, CredentialPool] = {}
    single: dict[str, str] = {}
    for provider in providers:
        keys = keys_from_env(provider, primary_variable(provider, config.model), section, env)
        if len(keys) > 1:
            pools[provider] = CredentialPool(provider, keys, strategy=section.strategies.get(provider, section.strategy), clock=clock)
        elif keys:
            single[provider] = keys[0]
    # Only the variables key_for can name are kept, not the whole environment.
    names = {*KEY_VARIABLES.values(), config.model.api_key_env, *(added.key_env for added in added_providers())}
    relevant = {name: env[name] for name in names if name and env.get(name)}
    return ProviderKeys(MappingProxyType(pools), config.model, MappingProxyType(relevant), MappingProxyType(single))
