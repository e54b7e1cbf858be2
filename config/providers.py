"""Configuration sections of the provider layer (``model``, ``prompt_caching``,
``streaming``, ``auxiliary``), defaults from the specification."""

from __future__ import annotations

import attrs
from attrs import validators as v

from config.validators import on_off, optional_str, positive_int, positive_number

#: The wire protocols an adapter speaks (``providers.modes`` picks one when unset).
API_MODES = ("chat_completions", "anthropic_messages", "codex_responses")

#: Every provider name a client may pass (``--provider``): the keyed ones
#: (``providers.recovery.keys``), ``custom`` (any OpenAI-compatible URL, a key optional) and
#: the Codex Responses backends.
KNOWN_PROVIDERS = ("openai", "anthropic", "openrouter", "custom", "codex", "openai-codex")


@attrs.frozen
class ModelConfig:
    """``model:`` which model and endpoint sessions use by default.

    ``api_key_env`` names the environment variable holding the key of this
    section's provider; when unset the provider's usual variable is used
    (``OPENAI_API_KEY`` ...). See ``providers.recovery.keys``.

    ``vision``: whether images users send (from a messaging platform) reach the model as image content:
    ``auto`` decides by the model's family (``conversation.images``), ``on`` and ``off`` say so. Without
    it the model is told where the file is.
    """

    default: str = attrs.field(default="anthropic/claude-opus-4.6", validator=v.instance_of(str))
    provider: str | None = attrs.field(default=None, validator=optional_str)
    base_url: str | None = attrs.field(default=None, validator=optional_str)
    api_mode: str | None = attrs.field(default=None, validator=v.optional(v.in_(API_MODES)))
    context_length: int | None = attrs.field(default=None, validator=v.optional(positive_int))
    max_output_tokens: int | None = attrs.field(default=None, validator=v.optional(positive_int))
    api_key_env: str | None = attrs.field(default=None, validator=optional_str)
    # The annotation is what the file may hold (the config loader checks it before the converter runs);
    # the attribute is always a string.
    vision: str | bool = attrs.field(
        default="auto", converter=on_off,
        validator=v.in_(("auto", "on", "off")),
    )

    @property
    def default_provider(self) -> str:
        """The provider sessions use unless a client names another (see :meth:`provider_for`)."""
        return self.provider_for(self.default)

    def provider_for(self, model: str, base_url: str | None = None) -> str:
        """The provider requests for ``model`` go to: ``provider`` when set; without it and without a
        base URL (``base_url``, else this section's), ``openrouter`` for a vendor-prefixed id
        (``anthropic/claude-opus-4.6``, which only OpenRouter serves, as Hermes's ``auto`` picks it), else
        ``openai``."""
        if self.provider:
            return self.provider
        return "openrouter" if "/" in model and not (base_url or self.base_url) else "openai"


# Values Hermes reads as "caching off" (YAML gives false for a bare off/no).
_CACHING_OFF = (None, False, "", "off", "disabled", "no", "none", "false")


# Typed as the field is (a plain "5m" would make mypy read the field as never None).
_DEFAULT_CACHE_TTL: str | None = "5m"


def _cache_ttl(value: object) -> object:
    return None if value in _CACHING_OFF else value


@attrs.frozen
class PromptCachingConfig:
    """``prompt_caching:`` Anthropic cache breakpoint lifetime, ``5m`` or ``1h``; off as in Hermes
    (``false``, ``off``, ``none`` ...) sends no cache breakpoints."""

    cache_ttl: str | None = attrs.field(default=_DEFAULT_CACHE_TTL, converter=_cache_ttl, validator=v.optional(v.in_(("5m", "1h"))))


@attrs.frozen
class StreamingConfig:
    """``streaming:`` deadlines on a provider stream, in seconds, and the connections kept per provider.

    ``max_keepalive_connections`` is how many idle connections a provider's client keeps for reuse: with
    fewer than the sessions streaming at once, most requests pay a new connection (httpx's default is 20).
    """

    stale_timeout_seconds: float = attrs.field(default=90.0, validator=positive_number)
    read_timeout_seconds: float = attrs.field(default=60.0, validator=positive_number)
    connect_timeout_seconds: float = attrs.field(default=10.0, validator=positive_number)
    max_connections: int = attrs.field(default=1000, validator=positive_int)
    max_keepalive_connections: int = attrs.field(default=1000, validator=positive_int)


def _unset_as_none(value: object) -> object:
    """Hermes's ``auto`` and empty string for a per-task model setting: unset."""
    return None if value in ("", "auto") else value


@attrs.frozen
class AuxiliaryTaskConfig:
    """One side task's block under ``auxiliary:`` (Hermes's per-task slot): where its requests go.

    Attributes:
        timeout: seconds one run of the task may take before it is abandoned.
        provider / model / base_url: where the task goes instead of the auxiliary model, as Hermes routes
            it (``auto`` or empty: unset, the auxiliary model's, else the main model's).
    """

    timeout: float = attrs.field(default=120.0, validator=positive_number)
    provider: str | None = attrs.field(default=None, converter=_unset_as_none, validator=optional_str)
    model: str | None = attrs.field(default=None, converter=_unset_as_none, validator=optional_str)
    base_url: str | None = attrs.field(default=None, converter=_unset_as_none, validator=optional_str)


@attrs.frozen
class BackgroundReviewConfig(AuxiliaryTaskConfig):
    """``auxiliary.background_review:`` the learning loop's review after a turn (Hermes's block).

    Attributes:
        enabled: run the review at all; false is the one switch that turns the whole loop off (ours:
            Hermes stops it only by setting both nudge intervals to 0).
        timeout: seconds one review may take before it is abandoned (Hermes's default, 120).
    """

    enabled: bool = attrs.field(default=True, validator=v.instance_of(bool), kw_only=True)


@attrs.frozen
class CuratorModelConfig(AuxiliaryTaskConfig):
    """``auxiliary.curator:`` where the skills curator's consolidation pass goes (Hermes's block).

    Attributes:
        timeout: seconds one pass may take before it is abandoned and its changes undone (Hermes's 600).
    """

    timeout: float = attrs.field(default=600.0, validator=positive_number)


@attrs.frozen
class AuxiliaryConfig:
    """``auxiliary:`` the cheaper model used for side tasks such as compression
    summaries and the background review; unset fields fall back to the main ``model`` section."""

    model: str | None = attrs.field(default=None, validator=optional_str)
    provider: str | None = attrs.field(default=None, validator=optional_str)
    base_url: str | None = attrs.field(default=None, validator=optional_str)
    background_review: BackgroundReviewConfig = attrs.field(
        factory=BackgroundReviewConfig, validator=v.instance_of(BackgroundReviewConfig)
    )
    curator: CuratorModelConfig = attrs.field(factory=CuratorModelConfig, validator=v.instance_of(CuratorModelConfig))
