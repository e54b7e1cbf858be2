"""Model providers that plugins add (``ctx.register_provider``), and the daemon's table of them.

A plugin provider is an endpoint with a name: its base URL, the wire protocol it speaks (``api_mode``;
unset, detected from the URL as for any endpoint), the variable holding its key and the models it serves
(for ``plugins list``; a session may name any model). With the plugin loaded, ``model.provider: NAME``,
a ``fallback_providers`` entry or ``chat --provider NAME`` sends requests there, the key read from
``key_env``.

The table is the daemon's, filled once when its plugins load (before any session starts) and read by the
target resolution (``providers.modes``) and the key lookup (``providers.recovery.keys``). A provider whose
plugin failed, or that no plugin registered, is not in it: a session asking for it is refused with the
reason, and every other provider is untouched.

Which names a plugin registers is known only once it runs (in the daemon, or ``config check``'s probe).
Reading the configuration, a name that is not built in is taken only when ``plugins.enabled`` names an
installed plugin (:func:`enabled_plugins_installed`, from the packages' metadata: nothing is imported);
otherwise it stays the error it always was.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from urllib.parse import urlsplit

import attrs

from config.hooks import PLUGIN_ENTRY_POINT_GROUPS
from config.providers import API_MODES, KNOWN_PROVIDERS

__all__ = [
    "PluginProvider",
    "ProviderClash",
    "added_provider",
    "added_providers",
    "enabled_plugins_installed",
    "install_providers",
    "provider_clash",
]


class ProviderClash(ValueError):
    """A plugin registered a provider whose name is built in or another plugin's."""


def _http_url(instance: PluginProvider, attribute: attrs.Attribute[str], value: str) -> None:
    parts = urlsplit(value) if isinstance(value, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"provider {instance.name!r}: base_url must be an http(s) URL, got {value!r}")


def _mode(instance: PluginProvider, attribute: attrs.Attribute[str | None], value: str | None) -> None:
    if value is not None and value not in API_MODES:
        raise ValueError(f"provider {instance.name!r}: api_mode must be one of {', '.join(API_MODES)}, got {value!r}")


def _name(instance: PluginProvider, attribute: attrs.Attribute[str], value: str) -> None:
    if not isinstance(value, str) or not value.strip() or value != value.strip().lower():
        raise ValueError(f"a provider name must be a non-empty lower-case string, got {value!r}")


def _models(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


@attrs.frozen
class PluginProvider:
    """One provider a plugin registered.

    Raises:
        ValueError: a name that is not a lower-case word, a base URL that is not http(s), an unknown
            ``api_mode``, or a ``key_env`` or model that is not a string.
    """

    name: str = attrs.field(validator=_name)
    plugin: str = attrs.field(validator=attrs.validators.instance_of(str))
    base_url: str = attrs.field(validator=_http_url)
    api_mode: str | None = attrs.field(default=None, validator=_mode)
    key_env: str | None = attrs.field(default=None, validator=attrs.validators.optional(attrs.validators.instance_of(str)))
    models: tuple[str, ...] = attrs.field(
        default=(), converter=_models, validator=attrs.validators.deep_iterable(attrs.validators.instance_of(str))
    )


# The daemon's table: written once, before sessions exist, by ``install_providers``; read-only after.
_TABLE: Mapping[str, PluginProvider] = MappingProxyType({})


def provider_clash(name: str, taken: Mapping[str, PluginProvider]) -> str | None:
    """Why a plugin may not register provider ``name`` when ``taken`` are already registered, or None."""
    if name in KNOWN_PROVIDERS:
        return f"provider {name!r} is built in; a plugin cannot replace it"
    if name in taken:
        return f"provider {name!r} is already registered by plugin {taken[name].plugin}"
    return None


def install_providers(providers: Iterable[PluginProvider]) -> None:
    """Make ``providers`` (the loaded plugins') the daemon's plugin providers, replacing any earlier table.

    Raises:
        ProviderClash: a name is built in, or given twice (nothing is installed then).
    """
    table: dict[str, PluginProvider] = {}
    for provider in providers:
        clash = provider_clash(provider.name, table)
        if clash is not None:
            raise ProviderClash(clash)
        table[provider.name] = provider
    global _TABLE
    _TABLE = MappingProxyType(table)


def added_provider(name: str | None) -> PluginProvider | None:
    """The plugin provider called ``name``, or None (built in, unknown, or its plugin did not load)."""
    return _TABLE.get((name or "").strip().lower())


def added_providers() -> tuple[PluginProvider, ...]:
    """Every plugin provider of the daemon."""
    return tuple(_TABLE.values())


def installed_plugin_names() -> set[str]:
    """The names of the installed plugins (their packages' metadata; none is imported)."""
    try:
        return {entry.name for group in PLUGIN_ENTRY_POINT_GROUPS for entry in importlib.metadata.entry_points(group=group)}
    except Exception:  # a broken metadata file of some installed package: as if none were installed
        return set()


def enabled_plugins_installed(section: object) -> list[str]:
    """The installed plugins a raw ``plugins:`` section enables (and does not disable): those that may add
    providers."""
    if not isinstance(section, Mapping):
        return []
    enabled, disabled = section.get("enabled"), section.get("disabled")
    names = [name for name in enabled if isinstance(name, str)] if isinstance(enabled, list) else []
    refused = set(disabled) if isinstance(disabled, list) else set()
    wanted = [name for name in names if name not in refused]
    if not wanted:
        return []
    installed = installed_plugin_names()
    return [name for name in wanted if name in installed]
