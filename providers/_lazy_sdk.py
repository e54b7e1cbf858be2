"""The provider SDKs, each loaded when a session first talks through it, in a worker thread.

Importing the OpenAI SDK builds some hundreds of pydantic models (about a third of a second of CPU, a
third of a daemon's start), the Anthropic SDK some thousands (about two seconds): a daemon whose sessions
use other providers, or that only serves its control socket (most of the tests' daemons), should not pay
that at every start, and a daemon that does pay it must not stall its event loop meanwhile. Until an SDK
is loaded no error of it can exist, so the error checks (:func:`loaded_openai`, :func:`loaded_anthropic`)
simply leave it out.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

import trio

__all__ = ["anthropic_sdk", "loaded_anthropic", "loaded_openai", "openai_sdk", "sdk_types"]

OPENAI = "openai"
ANTHROPIC = "anthropic"


def loaded_openai() -> ModuleType | None:
    """The OpenAI SDK if something has loaded it already, else None (nothing of it can be in play)."""
    return sys.modules.get(OPENAI)


def loaded_anthropic() -> ModuleType | None:
    """The Anthropic SDK if something has loaded it already, else None (nothing of it can be in play)."""
    return sys.modules.get(ANTHROPIC)


async def openai_sdk() -> ModuleType:
    """The OpenAI SDK, imported in a worker thread the first time."""
    return await _sdk(OPENAI)


async def anthropic_sdk() -> ModuleType:
    """The Anthropic SDK, imported in a worker thread the first time."""
    return await _sdk(ANTHROPIC)


def sdk_types(sdk: str, name: str) -> tuple[type[BaseException], ...]:
    """``(sdk.name,)`` when the SDK named ``sdk`` is loaded, else ``()``: for ``isinstance`` checks of its
    errors, which cannot exist before it is."""
    module = sys.modules.get(sdk)
    return (getattr(module, name),) if module is not None else ()


async def _sdk(name: str) -> ModuleType:
    module = sys.modules.get(name)
    if module is None:
        module = await trio.to_thread.run_sync(importlib.import_module, name)
    return module
