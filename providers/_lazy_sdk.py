"""The provider SDKs, each loaded when a session first talks through it, in a worker thread.

Importing the OpenAI SDK builds some hundreds of pydantic models (about a third of a second of CPU, a
third of a daemon's start), the Anthropic SDK some thousands (about two seconds): a daemon whose sessions
use other providers, or that only serves its control socket (most of the tests' daemons), should not pay
that at every start, and a daemon that does pay it must not stall its event loop meanwhile. Until an SDK
is loaded no error of it can exist, so the error checks (:func:`loaded_openai`, :func:`loaded_anthropic`)
simply leave it out.

A daemon still loads the SDK its configured model speaks from the start of its start (:func:`preload_sdk`),
in a worker thread beside the rest of the start: its control socket answers without waiting for it, and its
first turn, usually seconds later, does not pay it.
"""

from __future__ import annotations

import importlib
import logging
import sys
from types import ModuleType

import trio

__all__ = ["anthropic_sdk", "loaded_anthropic", "loaded_openai", "openai_sdk", "preload_sdk", "sdk_for", "sdk_types"]

log = logging.getLogger("hermes_actors.providers")

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
    module = sys.modules.get(sdk)
    return (getattr(module, name),) if module is not None else ()


async def _sdk(name: str) -> ModuleType:
    module = sys.modules.get(name)
    if module is None:
        module = await trio.to_thread.run_sync(importlib.import_module, name)
    return module
