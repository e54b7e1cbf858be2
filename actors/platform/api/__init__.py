"""The OpenAI-compatible HTTP API platform (``platform/api`` in the actor tree).

Modules: :mod:`.server` (the actor, hypercorn), :mod:`.app` (routes, auth,
errors), :mod:`.completions` (chat completions), :mod:`.runs` (the runs API),
:mod:`.gateway` (admission and sessions), :mod:`.turns` (watching one turn),
:mod:`.wire` (request parsing, response shapes, SSE frames), :mod:`.sse`,
:mod:`.auth`, :mod:`.errors`.

The names below are loaded on first use: the server pulls in hypercorn and Starlette, which a daemon
without ``platforms.api_server`` never needs (cron reaches :mod:`.turns` through this package).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from actors.platform.api.errors import ApiError, ApiStartRefused
    from actors.platform.api.server import ApiServer

# Public name -> the submodule defining it.
_EXPORTS = {"ApiError": "errors", "ApiServer": "server", "ApiStartRefused": "errors"}

__all__ = ["ApiError", "ApiServer", "ApiStartRefused"]


def __getattr__(name: str) -> Any:
    """Load an exported name from its submodule on first use."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
