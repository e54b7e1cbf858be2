"""The OpenAI-compatible HTTP API platform (``platform/api`` in the actor tree).

Modules: :mod:`.server` (the actor, hypercorn), :mod:`.app` (routes, auth,
errors), :mod:`.completions` (chat completions), :mod:`.runs` (the runs API),
:mod:`.gateway` (admission and sessions), :mod:`.turns` (watching one turn),
:mod:`.wire` (request parsing, response shapes, SSE frames), :mod:`.sse`,
:mod:`.auth`, :mod:`.errors`.
"""

from __future__ import annotations

from actors.platform.api.errors import ApiError, ApiStartRefused
from actors.platform.api.server import ApiServer

__all__ = ["ApiError", "ApiServer", "ApiStartRefused"]
