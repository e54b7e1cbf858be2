"""Plugins: installed Python packages that add tools and hooks through entry points (Hermes's plugins).

- ``context``: the ``ctx`` a plugin's ``register`` is given, and its tools' handlers adapted.
- ``loader``: finding the installed plugins and loading the enabled ones, each isolated.
"""

from tools.plugins.context import PluginContext
from tools.plugins.loader import PLUGIN_LOAD_SECONDS, LoadedPlugins, load_plugins

__all__ = ["PLUGIN_LOAD_SECONDS", "LoadedPlugins", "PluginContext", "load_plugins"]
