"""The provider SDKs, each loaded when a session first talks through it, in a worker thread.

Importing the OpenAI SDK builds some hundreds of pydantic models (about a third of a second of CPU, a
third of a daemon's start), the Anthropic SDK some thousands (about two seconds): a daemon whose sessions
use other providers, or that only serves its control socket (most of the tests' daemons), should not pay
that at every start, and a daemon that does pay it must not stall its event loop meanwhile. Until an SDK
is loaded no error of it can exist, so the error checks (:func:`sdk_types`) simply leave it out.

A daemon still loads the SDK its configured model speaks (:func:`preload_sdk`) once its control socket
listens: the socket answers without waiting for it, and a first turn, usually seconds later, does not pay it.
"""

from __future__ import annotations

import importlib
import logging
import sys
from types import ModuleType

import trio

__all__ = ["anthropic_sdk", "openai_sdk", "preload_sdk", "sdk_for", "sdk_types"]

log = logging.getLogger("hermes_actors.providers")

OPENAI = "openai"
ANTHROPIC = "anthropic"


async def openai_sdk() -> ModuleType:
    """The OpenAI SDK, imported in a worker thread the first time."""
    return await _sdk(OPENAI)


async def anthropic_sdk() -> ModuleType:
    """The Anthropic SDK, imported in a worker thread the first time."""
    return await _sdk(ANTHROPIC)


def sdk_for(api_mode: str) -> str:
    """The name of the SDK a wire protocol (``resolve_api_mode``'s answer) is spoken through."""
    return ANTHROPIC if api_mode == "anthropic_messages" else OPENAI


async def preload_sdk(api_mode: str) -> None:
    """Load the SDK ``api_mode`` is spoken through, in a worker thread, ahead of the first call that needs it.

    A failure is logged, not raised: the first call through the SDK meets the same error, where a session
    reports it; a warm-up must not stop the daemon.
    """
    try:
        await _sdk(sdk_for(api_mode))
    except Exception as error:
        log.warning("loading the %s SDK ahead of the first model call failed: %s", sdk_for(api_mode), error)


def sdk_types(sdk: str, name: str) -> tuple[type[BaseException], ...]:
    """``(sdk.name,)`` when the SDK named ``sdk`` is loaded, else ``()``: for ``isinstance`` checks of its
    errors, which cannot exist before it is."""
    # A module still being imported may not have the class yet; nothing of it can be in play then.
    found = getattr(sys.modules.get(sdk), name, None)
    return (found,) if found is not None else ()


#: The SDKs loaded to the end. ``sys.modules`` holds a module from the start of its import, so another
#: task's (or the daemon's preload's) import under way would hand out a module still half made.
_LOADED: dict[str, ModuleType] = {}


async def _sdk(name: str) -> ModuleType:
    module = _LOADED.get(name)
    if module is None:
        # An import under way in another thread holds the module's lock: this one waits for its end.
        module = _LOADED[name] = await trio.to_thread.run_sync(importlib.import_module, name)
    return module
