"""Configuration sections of provider error recovery: ``retry``, ``credential_pool``
and the ``fallback_providers`` list. Defaults are the specification's."""

from __future__ import annotations

import attrs
from attrs import validators as v

from config.providers import API_MODES
from config.validators import integer, non_empty_str, number, optional_str, positive_number

STRATEGIES = ("fill_first", "round_robin", "random", "least_used")


def _max_not_below_base(instance: RetryConfig, attribute: attrs.Attribute, value: float) -> None:
    if value < instance.base_delay:
        raise ValueError(f"max_delay ({value}) must not be below base_delay ({instance.base_delay})")


@attrs.frozen
class RetryConfig:
    """``retry:`` how patiently a failed provider call is retried.

    ``max_retries`` is not read from this section: its key is Hermes's ``agent.api_max_retries``
    (``retry.max_retries`` is its deprecated name), and the loader copies it here for the recovery layer.

    ``connection_retries`` / ``connection_delay`` bound a host name that does not resolve
    (offline, a typo in ``base_url``) and a refused connection (a local server not started, a
    wrong port): they fail at once, so they get a few quick tries instead of the backoff a busy
    server gets.
    """

    max_retries: int = attrs.field(default=3, validator=integer(ge=0, le=20))
    base_delay: float = attrs.field(default=5.0, validator=positive_number)
    max_delay: float = attrs.field(default=120.0, validator=[positive_number, _max_not_below_base])
    jitter_ratio: float = attrs.field(default=0.5, validator=number(ge=0, le=1))
    connection_retries: int = attrs.field(default=2, validator=integer(ge=0, le=20))
    connection_delay: float = attrs.field(default=1.0, validator=number(ge=0, le=60))


def _env_names(instance: object, attribute: attrs.Attribute, value: object) -> None:
    if not isinstance(value, dict):
        raise TypeError(f"{attribute.name} must map provider names to lists of variable names")
    for provider, names in value.items():
        if not isinstance(provider, str) or not isinstance(names, list) or not all(
            isinstance(name, str) and name for name in names
        ):
            raise TypeError(f"{attribute.name}.{provider} must be a list of environment variable names")


@attrs.frozen
class CredentialPoolConfig:
    """``credential_pool:`` how several keys of one provider are chosen.

    ``extra_keys`` maps a provider to the names of environment variables holding
    further keys (``{"openrouter": ["OPENROUTER_API_KEY_2"]}``); the provider's
    usual variable always comes first. Keys are read from the environment, never
    written to config or to the pool's state file. ``strategies`` overrides ``strategy`` for
    one provider (``{"openrouter": "round_robin"}``; Hermes's ``credential_pool_strategies``).
    """

    strategy: str = attrs.field(default="fill_first", validator=v.in_(STRATEGIES))
    strategies: dict[str, str] = attrs.field(
        factory=dict, validator=v.deep_mapping(key_validator=non_empty_str, value_validator=v.in_(STRATEGIES))
    )
    extra_keys: dict[str, list[str]] = attrs.field(factory=dict, validator=_env_names)


@attrs.frozen
class FallbackProviderConfig:
    """One entry of ``fallback_providers:``, tried in order when the primary fails."""

    provider: str = attrs.field(validator=non_empty_str)
    model: str = attrs.field(validator=non_empty_str)
    base_url: str | None = attrs.field(default=None, validator=optional_str)
    api_mode: str | None = attrs.field(default=None, validator=v.optional(v.in_(API_MODES)))
