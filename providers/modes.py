"""Which wire protocol (``api_mode``) a provider speaks.

Resolution order (the specification's): an explicit mode wins; then the
provider name (a plugin's provider: the mode it registered); then heuristics on the
base URL; otherwise Chat Completions.
Bedrock is not implemented here, so it is not a possible answer.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from config.plugin_providers import added_provider
from config.providers import API_MODES

from .errors import ProviderConfigError

_ANTHROPIC_PROVIDERS = frozenset({"anthropic"})
_RESPONSES_PROVIDERS = frozenset({"openai-codex", "codex"})

#: Endpoints of the providers the SDKs do not default to (OpenAI's SDK would send an
#: ``openrouter`` request to api.openai.com).
DEFAULT_BASE_URLS = {"openrouter": "https://openrouter.ai/api/v1"}

# Models that take the ``developer`` role instead of ``system`` at the wire.
DEVELOPER_ROLE_MODELS = ("gpt-5", "codex")


def resolve_api_mode(explicit: str | None, provider: str | None, base_url: str | None) -> str:
    """Pick ``chat_completions``, ``anthropic_messages`` or ``codex_responses``.

    Raises:
        ProviderConfigError: ``explicit`` names no known mode.
    """
    if explicit:
        if explicit not in API_MODES:
            raise ProviderConfigError(f"unknown api_mode {explicit!r}; expected one of {', '.join(API_MODES)}")
        return explicit
    name = (provider or "").strip().lower()
    added = added_provider(name)
    if added is not None and added.api_mode:
        return added.api_mode
    if name in _ANTHROPIC_PROVIDERS:
        return "anthropic_messages"
    if name in _RESPONSES_PROVIDERS:
        return "codex_responses"
    if base_url:
        parts = urlsplit(base_url)
        host = (parts.hostname or "").lower()
        path = parts.path.rstrip("/").lower()
        if host == "api.anthropic.com" or path.endswith("/anthropic"):
            return "anthropic_messages"
        if "/backend-api/codex" in path:
            return "codex_responses"
    return "chat_completions"


def uses_developer_role(model: str) -> bool:
    """True when the model family wants ``developer`` instead of ``system``."""
    bare = model.rsplit("/", 1)[-1].lower()
    return any(marker in bare for marker in DEVELOPER_ROLE_MODELS)


def default_base_url(provider: str | None) -> str | None:
    """The endpoint of ``provider`` when none is configured (a plugin's provider: the URL it registered;
    None: the SDK's own default)."""
    added = added_provider(provider)
    if added is not None:
        return added.base_url
    return DEFAULT_BASE_URLS.get((provider or "").strip().lower())
