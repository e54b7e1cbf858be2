"""Configuration of the messaging platforms plugins add: ``platforms.NAME`` for a NAME no built-in platform has.

Such a section holds the settings every platform shares (``config.gateway``: ``enabled``, ``allow_from``,
``dm_policy``, ``home_channel`` ...) and the plugin's own keys, which its adapter reads from ``settings``.
It is read so only while ``plugins.enabled`` names an installed plugin (which platforms a plugin adds is
known once the daemon loads it); otherwise its keys are unknown keys, as they always were.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import attrs
from attrs import validators as v

from config.gateway import GatewaySection
from config.validators import integer, optional_str

__all__ = ["MAX_ATTACHMENT_BYTES", "PluginPlatformConfig", "plugin_platform_sections"]

#: The largest file of a user's that is fetched unless configured: 20 MiB, as the built-in platforms'.
MAX_ATTACHMENT_BYTES = 20 * 1024 * 1024


@attrs.frozen
class PluginPlatformConfig(GatewaySection):
    """Section ``platforms.NAME`` of a plugin's platform: :class:`~config.gateway.GatewaySection`'s settings, and

    Attributes:
        home_channel: the chat a bare ``NAME`` destination means (cron's ``--deliver NAME``), as the
            platform writes its chats.
        max_attachment_bytes: the largest file a user may send that is fetched (0: no cap).
        settings: the section's other keys, the plugin's own (its server's address ...), as written.
    """

    # A plugin platform's chats are words, not numbers: the shared section's int does not fit them.
    home_channel: str | None = attrs.field(default=None, validator=optional_str)  # type: ignore[assignment]
    max_attachment_bytes: int = attrs.field(default=MAX_ATTACHMENT_BYTES, validator=integer(ge=0))
    settings: dict[str, Any] = attrs.field(factory=dict, validator=v.instance_of(dict))

    @property
    def max_file_bytes(self) -> int:
        """``max_attachment_bytes``."""
        return self.max_attachment_bytes


_SHARED = frozenset(attrs.fields_dict(PluginPlatformConfig)) - {"settings"}


def plugin_platform_sections(platforms: Mapping[str, Any], built_in: Collection[str]) -> dict[str, Any]:
    """``platforms`` (a raw section) with each mapping under a name not in ``built_in`` moved into
    ``plugin_platforms``, its keys that are not shared ones gathered into ``settings``."""
    moved: dict[str, Any] = dict(platforms.get("plugin_platforms") or {})
    kept: dict[str, Any] = {}
    for name, section in platforms.items():
        if name in built_in or name == "plugin_platforms" or not isinstance(section, Mapping):
            kept[name] = section
            continue
        own = {key: value for key, value in section.items() if key not in _SHARED}
        moved[name] = {**{key: value for key, value in section.items() if key in _SHARED}, "settings": own}
    return {**kept, "plugin_platforms": moved} if moved else kept
