"""The Anthropic SDK, loaded when a session first talks to Anthropic, in a worker thread.

Importing it builds some thousands of pydantic models (about two seconds of CPU): a daemon whose
sessions use other providers should not pay that at every start, and a daemon that does pay it must
not stall its event loop meanwhile. Until it is loaded no Anthropic error can exist, so the error
checks (:func:`loaded_anthropic`) simply leave it out.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

import trio

__all__ = ["anthropic_sdk", "loaded_anthropic"]

_NAME = "anthropic"


def loaded_anthropic() -> ModuleType | None:
    """The SDK if something has loaded it already, else None (nothing of it can be in play)."""
    return sys.modules.get(_NAME)


async def anthropic_sdk() -> ModuleType:
    """The SDK, imported in a worker thread the first time."""
    module = loaded_anthropic()
    if module is None:
        module = await trio.to_thread.run_sync(importlib.import_module, _NAME)
    return module
